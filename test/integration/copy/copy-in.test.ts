// test-tags: matrix, pglite
// COPY into the server through the client: copyFrom() streams of raw COPY
// data and copyFromRows() with values encoded here, in all three formats;
// server errors, CopyFail on abort, backpressure, the pipeline around a COPY,
// and statements that are not the COPY asked for. COPY out of the server:
// copy-out.test.ts.

import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { before, describe, test } from 'node:test'
import { AbortError, ArgumentError, CopyRowError, PgError, TimeoutError, createPool, type Client } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { copyTables, textRows } from '../../support/copy-tables.js'
import { mainDatabase } from '../../support/servers/test-server.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'

const db = await fileClient()
const { table, count } = copyTables(db)

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

describe('copyFrom(): raw COPY data', () => {
  test('text data in many small writes arrives whole; the result counts the rows; finish comes after the server confirmed', async () => {
    const t = await table()
    const s = db.copyFrom(`COPY ${t} FROM STDIN`)
    let finishedAt = -1
    s.on('finish', () => (finishedAt = performance.now()))
    // One write per row: many more writes than messages would be bearable.
    await pipeline(
      Readable.from(
        (function* () {
          for (let i = 1; i <= 20000; i++) yield `${i}\tname ${i}\t${i * 10}\n`
        })(),
      ),
      s,
    )
    assert.ok(finishedAt > 0)
    assert.deepEqual(await s.result, { command: 'COPY', rowCount: 20000 })
    assert.equal(s.rowCount, 20000)
    const r = await db.query<{ c: number; s: bigint }>(`SELECT count(*)::int AS c, sum(n)::int8 AS s FROM ${t}`)
    assert.deepEqual(r.rows[0], { c: 20000, s: 2000100000n })
  })

  test('CSV with a header, and binary data written by hand', async () => {
    const t = await table()
    const csv = db.copyFrom(`COPY ${t} FROM STDIN (FORMAT csv, HEADER true)`)
    await pipeline(Readable.from(['id,name,n\n1,"a, b",10\n2,"say ""hi""",\n']), csv)
    assert.equal((await csv.result).rowCount, 2)
    const bin = db.copyFrom(`COPY ${t} (id, n) FROM STDIN (FORMAT binary)`)
    const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
    const row = Buffer.alloc(2 + 4 + 4 + 4 + 8)
    row.writeInt16BE(2, 0)
    row.writeInt32BE(4, 2)
    row.writeInt32BE(3, 6)
    row.writeInt32BE(8, 10)
    row.writeBigInt64BE(-5n, 14)
    await pipeline(Readable.from([header, row, Buffer.from([0xff, 0xff])]), bin)
    assert.equal((await bin.result).rowCount, 1)
    const r = await db.query(`SELECT id, name, n FROM ${t} ORDER BY id`)
    assert.deepEqual(r.rows, [
      { id: 1, name: 'a, b', n: 10n },
      { id: 2, name: 'say "hi"', n: null },
      { id: 3, name: null, n: -5n },
    ])
  })

  test('a bad row rejects with the server error; nothing is copied and the connection goes on, in order', async () => {
    const t = await table()
    const before = db.query<{ n: number }>('SELECT 1 AS n')
    const s = db.copyFrom(`COPY ${t} FROM STDIN`)
    const behind = db.query<{ n: number }>('SELECT 2 AS n')
    await assert.rejects(
      pipeline(Readable.from([textRows(1, 500), '501\tbad\tnot-a-number\n', textRows(502, 1000)]), s),
      (e: unknown) => e instanceof PgError && e.code === '22P02' && /not-a-number/.test(e.message),
    )
    await assert.rejects(s.result, (e: unknown) => e instanceof PgError && e.code === '22P02')
    assert.equal((await before).rows[0]!.n, 1)
    assert.equal((await behind).rows[0]!.n, 2)
    assert.equal(await count(t), 0)
    // A constraint, found at the end of the data.
    await db.query(`INSERT INTO ${t} VALUES (7, 'x', 1)`)
    const s2 = db.copyFrom(`COPY ${t} FROM STDIN`)
    await assert.rejects(pipeline(Readable.from([textRows(1, 10)]), s2), (e: unknown) => e instanceof PgError && e.code === '23505')
    assert.equal(await count(t), 1)
  })

  test('a server error while the writer is still writing destroys the stream at once', serverOnly(NOT_ON_PGLITE.copyInAtEnd), async () => {
    const t = await table()
    const s = db.copyFrom(`COPY ${t} FROM STDIN`)
    s.write('1\tx\tnope\n')
    const err = await new Promise<Error>((resolve) => s.once('error', resolve))
    assert.ok(err instanceof PgError && err.code === '22P02')
    assert.ok(s.destroyed)
    assert.equal(s.write('2\ty\t2\n'), false)
    assert.deepEqual((await db.query('SELECT 3 AS n')).rows, [{ n: 3 }])
  })

  test('destroy(err) mid-copy sends CopyFail: the server rolls back and the result rejects with that error', async () => {
    const t = await table()
    const s = db.copyFrom(`COPY ${t} FROM STDIN`)
    s.write(textRows(1, 1000))
    await sleep(20)
    s.destroy(new Error('the upload was cut'))
    await assert.rejects(s.result, (e: unknown) => {
      assert.ok(e instanceof Error && e.message === 'the upload was cut')
      // The server's answer to the CopyFail is kept as the cause.
      assert.ok(e.cause instanceof PgError && /the upload was cut/.test(e.cause.message))
      return true
    })
    assert.equal(await count(t), 0)
    // destroy() without an error: an AbortError.
    const s2 = db.copyFrom(`COPY ${t} FROM STDIN`)
    s2.write(textRows(1, 10))
    s2.destroy()
    await assert.rejects(s2.result, AbortError)
    assert.equal(await count(t), 0)
  })

  test('an abort signal and a timeout send CopyFail too; an already aborted signal sends nothing', async () => {
    const t = await table()
    const ac = new AbortController()
    const s = db.copyFrom(`COPY ${t} FROM STDIN`, { signal: ac.signal })
    s.write(textRows(1, 100))
    setTimeout(() => ac.abort(), 20)
    await assert.rejects(s.result, AbortError)
    const s2 = db.copyFrom(`COPY ${t} FROM STDIN`, { timeout: 50 })
    s2.write(textRows(1, 100))
    await assert.rejects(s2.result, TimeoutError)
    const s3 = db.copyFrom(`COPY ${t} FROM STDIN`, { signal: AbortSignal.abort() })
    await assert.rejects(s3.result, AbortError)
    assert.equal(await count(t), 0)
    assert.deepEqual((await db.query('SELECT 4 AS n')).rows, [{ n: 4 }])
  })

  test('queries issued while a COPY is open wait for its end; a slow socket holds the writer back', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
    const t = await table()
    const c = await openClient()
    try {
      const s = c.copyFrom(`COPY ${t} FROM STDIN`)
      let laterDone = false
      const later = c.query(`SELECT count(*)::int AS c FROM ${t}`).then((r) => ((laterDone = true), r))
      // Enough to fill the socket's buffers many times over.
      const chunk = textRows(1, 2000)
      let writes = 0
      let waits = 0
      await new Promise<void>((resolve, reject) => {
        s.on('error', reject)
        const pump = (): void => {
          while (writes < 400) {
            writes++
            const body = chunk.replace(/^(\d+)/gm, (m) => String(Number(m) + (writes - 1) * 2000))
            if (!s.write(body)) {
              waits++
              s.once('drain', pump)
              return
            }
          }
          s.end(resolve)
        }
        pump()
      })
      assert.ok(waits > 0, 'the stream pushed back at least once')
      assert.equal((await s.result).rowCount, 800000)
      assert.equal((await later).rows[0]!.c, 800000, 'the query behind the COPY ran after it')
      assert.ok(laterDone)
    } finally {
      await c.end()
    }
  })

  test('on a pool, a COPY has a connection of its own: other queries go on meanwhile', serverOnly(NOT_ON_PGLITE.pool), async () => {
    const t = await table()
    const pool = createPool({ ...(await mainDatabase()).options, max: 2 })
    try {
      const s = pool.copyFrom(`COPY ${t} FROM STDIN`)
      s.write(textRows(1, 10))
      for (let i = 0; i < 20; i++) assert.equal((await pool.query<{ n: number }>('SELECT $1::int AS n', [i])).rows[0]!.n, i)
      s.end()
      assert.equal((await s.result).rowCount, 10)
    } finally {
      await pool.end()
    }
  })

  test('a statement that is not one COPY FROM STDIN is an ArgumentError; the connection stays usable', async () => {
    const t = await table()
    for (const [sql, what] of [
      ['SELECT 1', /answered with rows/],
      [`INSERT INTO ${t} VALUES (1, 'a', 1)`, /answered with INSERT 0 1/],
      [`COPY ${t} TO STDOUT`, /answered with COPY TO STDOUT/],
      [`COPY ${t} FROM STDIN; COPY ${t} FROM STDIN`, /another COPY FROM STDIN/],
    ] as const) {
      const s = db.copyFrom(sql)
      s.end(textRows(100, 101))
      await assert.rejects(s.result, (e: unknown) => e instanceof ArgumentError && what.test(e.message))
    }
    // The INSERT's row; the first of the two COPYs went down with the second (one implicit transaction).
    assert.equal(await count(t), 1)
    await assert.rejects(db.copyFrom(`COPY nosuch_${process.pid} FROM STDIN`).result, (e: unknown) => e instanceof PgError && e.code === '42P01')
    await assert.rejects(db.copyFrom(42 as unknown as string).result, ArgumentError)
    await assert.rejects(db.copyFrom('COPY t\0 FROM STDIN').result, ArgumentError)
    await assert.rejects(db.copyFrom(`COPY ${t} FROM STDIN`, { timeout: -1 }).result, ArgumentError)
    assert.deepEqual((await db.query('SELECT 5 AS n')).rows, [{ n: 5 }])
  })
})

describe('copyFromRows(): JS values encoded here', () => {
  const types = `id int PRIMARY KEY, i8 int8, f8 float8, num numeric, b bool, t text, ts timestamptz, d date, u uuid, j jsonb, by bytea, arr int[], mood ${'MOOD'}`
  let moodType = ''
  let typed = ''
  before(async () => {
    moodType = uniqueName('mood')
    await db.query(`CREATE TYPE ${moodType} AS ENUM ('sad', 'ok', 'happy')`)
    typed = uniqueName('typed')
    await db.query(`CREATE TABLE ${typed} (${types.replace('MOOD', moodType)})`)
  })

  const rowOf = (i: number): unknown[] => [
    i,
    BigInt(i) * 1_000_000_000_000n,
    i / 3,
    `${i}.000000000000000000001`,
    i % 2 === 0,
    i % 7 === 0 ? null : `text ${i} ,"\\\t\n'`,
    new Date(Date.UTC(2024, 1, 29, 12, 0, i % 60)),
    `2024-03-${String((i % 28) + 1).padStart(2, '0')}`,
    `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    { i, list: [1, 'two', null] },
    Buffer.from([i & 255, 0, 255]),
    [i, null, -i],
    ['sad', 'ok', 'happy'][i % 3],
  ]

  for (const format of ['binary', 'text', 'csv'] as const) {
    test(`${format}: every row reads back as query() returns values of those types (an enum met for the first time too)`, async () => {
      await db.query(`TRUNCATE ${typed}`)
      const rows = Array.from({ length: 3000 }, (_, i) => rowOf(i + 1))
      const r = await db.copyFromRows(typed, rows, { format })
      assert.deepEqual(r, { command: 'COPY', rowCount: 3000 })
      const back = await db.query(`SELECT * FROM ${typed} ORDER BY id`, [], { rowMode: 'array', types: { numeric: 'string', dates: 'string' } })
      assert.equal(back.rows.length, 3000)
      for (let i = 0; i < rows.length; i += 97) {
        const want = rows[i]!
        const got = back.rows[i] as unknown as unknown[]
        assert.deepEqual(got, want.map((v, k) => (k === 10 ? Buffer.from(v as Buffer) : v)), `row ${i + 1}`)
      }
    })
  }

  test('objects (columns from the first row), iterables and async iterables; default columns skip generated ones', async () => {
    const t = await table(', doubled int GENERATED ALWAYS AS (id * 2) STORED')
    assert.equal((await db.copyFromRows(t, [{ id: 1, name: 'one', n: undefined }, { id: 2, n: 20n }, { id: 3, name: 'three', n: 30n }])).rowCount, 3)
    // A key the first row did not have would be lost: refused instead.
    await assert.rejects(db.copyFromRows(t, [{ id: 4 }, { id: 5, name: 'five' }]), (e: unknown) => e instanceof CopyRowError && e.row === 2 && /name/.test(e.message))
    // With the columns given, other properties are left out on purpose.
    assert.equal((await db.copyFromRows(t, [{ id: 4, name: 'four', extra: true }], { columns: ['id', 'name'] })).rowCount, 1)
    function* gen(): Generator<unknown[]> {
      for (let i = 10; i < 1010; i++) yield [i, `g${i}`, BigInt(i)]
    }
    assert.equal((await db.copyFromRows(t, gen())).rowCount, 1000)
    async function* slow(): AsyncGenerator<unknown[]> {
      for (let i = 2000; i < 2300; i++) {
        if (i % 100 === 0) await sleep(5)
        yield [BigInt(i), i]
      }
    }
    assert.equal((await db.copyFromRows(t, slow(), { columns: ['n', 'id'], format: 'text' })).rowCount, 300)
    assert.equal((await db.copyFromRows(t, [])).rowCount, 0)
    const r = await db.query(`SELECT id, name, n, doubled FROM ${t} WHERE id IN (1, 2, 3, 4, 10, 2299) ORDER BY id`)
    assert.deepEqual(r.rows, [
      { id: 1, name: 'one', n: null, doubled: 2 },
      { id: 2, name: null, n: 20n, doubled: 4 },
      { id: 3, name: 'three', n: 30n, doubled: 6 },
      { id: 4, name: 'four', n: null, doubled: 8 },
      { id: 10, name: 'g10', n: 10n, doubled: 20 },
      { id: 2299, name: null, n: 2299n, doubled: 4598 },
    ])
  })

  test('a value that does not fit its column rejects with a CopyRowError naming row and column; nothing is copied', async () => {
    const t = await table()
    const rows = Array.from({ length: 5000 }, (_, i) => [i, 'x', BigInt(i)])
    rows[4321] = [4321, 'x', 'twelve']
    await assert.rejects(db.copyFromRows(t, rows), (e: unknown) => {
      assert.ok(e instanceof CopyRowError, String(e))
      assert.equal(e.row, 4322)
      assert.equal(e.column, 'n')
      return true
    })
    await assert.rejects(db.copyFromRows(t, [[1, 'a', 1n, 'one too many']]), CopyRowError)
    assert.equal(await count(t), 0)
    assert.deepEqual((await db.query('SELECT 6 AS n')).rows, [{ n: 6 }])
  })

  test('a source that throws, a constraint, an unknown column or table: the error, and the COPY rolled back', async () => {
    const t = await table()
    async function* failing(): AsyncGenerator<unknown[]> {
      for (let i = 0; i < 20000; i++) {
        if (i === 15000) throw new Error('the source broke')
        yield [i, 'x', 1n]
      }
    }
    await assert.rejects(db.copyFromRows(t, failing()), /the source broke/)
    await db.query(`INSERT INTO ${t} VALUES (19999, 'x', 1)`)
    let pulled = 0
    function* many(): Generator<unknown[]> {
      for (let i = 0; i < 20000; i++) {
        pulled++
        yield [i, 'x', 1n]
      }
    }
    await assert.rejects(db.copyFromRows(t, many()), (e: unknown) => e instanceof PgError && e.code === '23505')
    assert.equal(pulled, 20000)
    await assert.rejects(db.copyFromRows(t, [{ nope: 1 }]), (e: unknown) => e instanceof PgError && e.code === '42703')
    await assert.rejects(db.copyFromRows(`nosuch_${process.pid}`, [[1]]), (e: unknown) => e instanceof PgError && e.code === '42P01')
    assert.equal(await count(t), 1)
  })

  test('bad arguments are ArgumentErrors', async () => {
    const t = await table()
    await assert.rejects(db.copyFromRows(`${t}; DROP TABLE ${t}`, [[1]]), ArgumentError)
    await assert.rejects(db.copyFromRows(t, 42 as unknown as unknown[][]), ArgumentError)
    await assert.rejects(db.copyFromRows(t, [[1]], { columns: [] }), ArgumentError)
    await assert.rejects(db.copyFromRows(t, [[1]], { columns: ['id', 'id'] }), ArgumentError)
    await assert.rejects(db.copyFromRows(t, [[1]], { format: 'xml' as 'csv' }), ArgumentError)
    await assert.rejects(db.copyFromRows(t, [[1]], { format: 'binary', delimiter: ',' }), ArgumentError)
    await assert.rejects(db.copyFromRows(t, [{}]), ArgumentError)
    assert.equal(await count(t), 0)
  })

  test('inside a transaction, a rollback takes the copied rows back', async () => {
    const t = await table()
    await assert.rejects(
      db.begin(async (tx) => {
        await tx.copyFromRows(t, [
          [1, 'a', 1n],
          [2, 'b', 2n],
        ])
        assert.equal(await count(t, tx as unknown as Client), 2)
        throw new Error('undo')
      }),
      /undo/,
    )
    assert.equal(await count(t), 0)
  })
})
