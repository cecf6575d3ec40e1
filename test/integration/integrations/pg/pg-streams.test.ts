// pg's submittable protocol: the real pg-cursor, pg-query-stream and
// pg-copy-streams packages, unchanged, on pipegres/pg's Client and on a pool's
// checkout; and a submittable that fails or is refused reports it through its
// own handlers, never by a throw from query().

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Client, Pool } from '../../../../src/integrations/pg/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

type Row = Record<string, unknown>
interface PgCursor {
  read(rows: number): Promise<Row[]>
  read(rows: number, cb: (err: Error | null, rows: Row[]) => void): void
  close(): Promise<void>
}
// Imported rather than required, so that `npm run test:peers`'s module hooks can swap their releases.
const Cursor = (await import('pg-cursor')).default as unknown as new (text: string, values?: unknown[], config?: object) => PgCursor
const QueryStream = (await import('pg-query-stream')).default as unknown as new (text: string, values?: unknown[], config?: object) => Readable
const copyStreams = (await import('pg-copy-streams')).default as unknown as { from(text: string): Writable & { rowCount: number }; to(text: string): Readable & { rowCount: number } }

const { connectionString } = await mainDatabase()
const pool = new Pool({ connectionString, max: 2 })
after(() => pool.end())

function within<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)
  })
  return Promise.race([p, limit]).finally(() => clearTimeout(timer))
}

async function client(): Promise<Client> {
  const c = new Client({ connectionString })
  await c.connect()
  return c
}

function collect<T>(into: T[]): Writable {
  return new Writable({
    objectMode: true,
    write(chunk: T, _enc, cb) {
      into.push(chunk)
      cb()
    },
  })
}

test('pg-cursor: reads of any size, parsed as pg parses, then [] at the end; the client goes on', async () => {
  const c = await client()
  try {
    const cursor: PgCursor = c.query(new Cursor('SELECT n, n::text AS t, now() AS at FROM generate_series(1, $1::int) AS n', [10]))
    const first = await within(cursor.read(3), 'read(3)')
    assert.deepEqual(first.map((r) => [r.n, r.t]), [[1, '1'], [2, '2'], [3, '3']])
    assert.ok(first[0]!.at instanceof Date)
    assert.deepEqual((await cursor.read(4)).map((r) => r.n), [4, 5, 6, 7])
    assert.deepEqual((await cursor.read(100)).map((r) => r.n), [8, 9, 10])
    assert.deepEqual(await cursor.read(5), [])
    await cursor.close()
    // Callbacks, as older code uses them.
    const cb: PgCursor = c.query(new Cursor('SELECT 1 AS one'))
    const rows = await within(new Promise<Record<string, unknown>[]>((resolve, reject) => cb.read(10, (err, r) => (err ? reject(err) : resolve(r)))), 'read with a callback')
    assert.deepEqual(rows, [{ one: 1 }])
    assert.deepEqual((await c.query('SELECT 2 AS two')).rows, [{ two: 2 }])
  } finally {
    await c.end()
  }
})

test('pg-cursor: closed early, in a transaction, and failing; queries after it run', async () => {
  const c = await client()
  const table = uniqueName('cursor_tx')
  try {
    const early: PgCursor = c.query(new Cursor('SELECT generate_series(1, 100000) AS n'))
    assert.equal((await early.read(2)).length, 2)
    await within(early.close(), 'close()')
    await c.query('BEGIN')
    await c.query(`CREATE TEMP TABLE ${table} (n int)`)
    await c.query(`INSERT INTO ${table} SELECT generate_series(1, 5)`)
    const inTx: PgCursor = c.query(new Cursor(`SELECT n FROM ${table} ORDER BY n`))
    assert.deepEqual((await inTx.read(10)).map((r) => r.n), [1, 2, 3, 4, 5])
    await inTx.close()
    await c.query('COMMIT')
    const bad: PgCursor = c.query(new Cursor('SELECT no_such_column'))
    await assert.rejects(within(bad.read(1), 'a failing read'), (err: { code?: string }) => err.code === '42703')
    assert.deepEqual((await c.query('SELECT 3 AS three')).rows, [{ three: 3 }])
  } finally {
    await c.end()
  }
})

test('pg-query-stream: a pipeline of rows, with backpressure, on a client and on a checkout', async () => {
  const c = await client()
  try {
    const rows: { n: number }[] = []
    await within(pipeline(c.query(new QueryStream('SELECT generate_series(1, $1::int) AS n', [2500], { batchSize: 100 })), collect(rows)), 'the stream')
    assert.equal(rows.length, 2500)
    assert.deepEqual(rows[2499], { n: 2500 })
  } finally {
    await c.end()
  }
  const checkout = await pool.connect()
  try {
    const rows: unknown[][] = []
    await within(pipeline(checkout.query(new QueryStream('SELECT 1 AS a, 2 AS b', [], { rowMode: 'array' })), collect(rows)), 'the stream on a checkout')
    assert.deepEqual(rows, [[1, 2]])
    // Left before its end: the stream is destroyed, the connection goes on.
    const stream = checkout.query(new QueryStream('SELECT generate_series(1, 100000) AS n', [], { batchSize: 50 }))
    for await (const row of stream) if ((row as { n: number }).n === 10) break
    assert.deepEqual((await checkout.query('SELECT 4 AS four')).rows, [{ four: 4 }])
  } finally {
    checkout.release()
  }
})

test('pg-copy-streams: COPY FROM STDIN and TO STDOUT, their row counts, and a failing COPY', async () => {
  const c = await client()
  const table = uniqueName('copy_streams')
  try {
    await c.query(`CREATE TEMP TABLE ${table} (id int, name text)`)
    const into = c.query(copyStreams.from(`COPY ${table} FROM STDIN`))
    const lines = Array.from({ length: 1000 }, (_, i) => `${i}\tname ${i}\n`)
    await within(pipeline(Readable.from(lines), into), 'COPY FROM')
    assert.equal(into.rowCount, 1000)
    assert.deepEqual((await c.query(`SELECT count(*)::int AS n FROM ${table}`)).rows, [{ n: 1000 }])
    const chunks: Buffer[] = []
    const out = c.query(copyStreams.to(`COPY (SELECT * FROM ${table} ORDER BY id) TO STDOUT`))
    await within(pipeline(out, collect(chunks)), 'COPY TO')
    assert.equal(Buffer.concat(chunks).toString(), lines.join(''))
    assert.equal(out.rowCount, 1000)
    // A bad row: the server's error reaches the stream, and the client goes on.
    const bad = c.query(copyStreams.from(`COPY ${table} FROM STDIN`))
    await assert.rejects(within(pipeline(Readable.from(['x\ty\n']), bad), 'a failing COPY'), (err: { code?: string }) => err.code === '22P02')
    // Destroyed by its writer: the COPY is rolled back.
    const aborted = c.query(copyStreams.from(`COPY ${table} FROM STDIN`))
    const abortError = new Promise<Error>((resolve) => aborted.on('error', resolve))
    aborted.write('5000\tnever\n')
    aborted.destroy(new Error('changed my mind'))
    await within(new Promise((resolve) => aborted.on('close', resolve)), 'the destroyed COPY')
    assert.equal((await abortError).message, 'changed my mind')
    assert.deepEqual((await c.query(`SELECT count(*)::int AS n FROM ${table}`)).rows, [{ n: 1000 }])
  } finally {
    await c.end()
  }
})

test('a submittable that throws or refuses reports through its handlers or callback, never from query()', async () => {
  const c = await client()
  try {
    const thrown = await within(
      new Promise<Error>((resolve) => {
        assert.doesNotThrow(() =>
          c.query({
            submit() {
              throw new Error('cannot start')
            },
            handleError: resolve,
          } as never),
        )
      }),
      'the thrown error',
    )
    assert.equal(thrown.message, 'cannot start')
    const refused = await within(
      new Promise<Error>((resolve) => {
        c.query({ submit: () => new Error('refused by submit'), handleError: resolve } as never)
      }),
      'the refusal',
    )
    assert.equal(refused.message, 'refused by submit')
    // A plain query-like object using the simple protocol.
    const seen: unknown[] = []
    await within(
      new Promise<void>((resolve, reject) => {
        c.query({
          submit(con: { query(text: string): void }) {
            con.query('SELECT 1 AS a; SELECT 2 AS b')
          },
          handleDataRow: (msg: { fields: unknown[] }) => seen.push(msg.fields[0]),
          handleCommandComplete() {},
          handleError: reject,
          handleReadyForQuery: () => resolve(),
        } as never)
      }),
      'a simple-protocol submittable',
    )
    assert.deepEqual(seen, ['1', '2'])
    assert.deepEqual((await c.query('SELECT 5 AS five')).rows, [{ five: 5 }])
  } finally {
    await c.end()
  }
})
