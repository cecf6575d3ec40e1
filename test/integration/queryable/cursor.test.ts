// test-tags: matrix, pglite
// cursor(): a portal executed a batch at a time. Batches of the requested size,
// at most one batch fetched ahead, early exit closing the portal, errors, and
// how queries issued meanwhile wait for the cursor.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AbortError, ArgumentError, ConnectionError, PgError, TimeoutError, createPool } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'

const db = await fileClient()

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

describe('batches', () => {
  test('rows come in batches of batchSize, the last one shorter; fields, command and rowCount at the end', async () => {
    const sizes: number[] = []
    const all: number[] = []
    const c = db.cursor<{ g: number }>('SELECT g FROM generate_series(1, $1::int) g', [2500], { batchSize: 1000 })
    for await (const rows of c) {
      sizes.push(rows.length)
      for (const r of rows) all.push(r.g)
    }
    assert.deepEqual(sizes, [1000, 1000, 500])
    assert.deepEqual(all, Array.from({ length: 2500 }, (_, i) => i + 1))
    assert.equal(c.command, 'SELECT')
    assert.equal(c.rowCount, 2500)
    assert.deepEqual(
      c.fields.map((f) => f.name),
      ['g'],
    )
  })

  test('read() by hand, an exact multiple of the batch size, an empty result, rowMode array', async () => {
    const c = db.cursor<unknown[]>('SELECT g, g::text FROM generate_series(1, 4) g', [], { batchSize: 2, rowMode: 'array' })
    assert.deepEqual(await c.read(), [
      [1, '1'],
      [2, '2'],
    ])
    assert.deepEqual(await c.read(), [
      [3, '3'],
      [4, '4'],
    ])
    assert.deepEqual(await c.read(), [])
    assert.deepEqual(await c.read(), [])
    const empty = db.cursor('SELECT 1 WHERE false')
    assert.deepEqual(await empty.read(), [])
    assert.equal(empty.rowCount, 0)
  })

  test('values decode as query() decodes them, for types met for the first time too', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
    const type = uniqueName('cursor_mood')
    await db.query(`CREATE TYPE ${type} AS ENUM ('sad', 'happy')`)
    try {
      const c2 = await openClient()
      try {
        const sql = `SELECT g, g::int8 AS big, 'happy'::${type} AS mood, '{1,2}'::int[] AS arr, '2024-02-29'::date AS d FROM generate_series(1, 5) g`
        const expected = (await db.query(sql)).rows
        const got: unknown[] = []
        for await (const rows of c2.cursor(sql, [], { batchSize: 2 })) got.push(...rows)
        assert.deepEqual(got, expected)
      } finally {
        await c2.end()
      }
    } finally {
      await db.query(`DROP TYPE ${type}`)
    }
  })

  test('at most one batch is fetched ahead of the one being read', serverOnly(NOT_ON_PGLITE.admin), async () => {
    const seq = uniqueName('cursor_seq')
    await db.query(`CREATE SEQUENCE ${seq}`)
    try {
      const c = db.cursor<{ n: number }>(`SELECT nextval('${seq}') AS n FROM generate_series(1, 100000)`, [], { batchSize: 100 })
      const first = await c.read()
      assert.equal(first.length, 100)
      await sleep(100)
      // Rows the server has produced so far: the batch read and the one fetched ahead.
      const produced = Number((await adminQuery(`SELECT last_value FROM ${seq}`)).rows[0]![0])
      assert.ok(produced <= 200, `${produced} rows produced`)
      await c.close()
    } finally {
      await db.query(`DROP SEQUENCE ${seq}`)
    }
  })
})

describe('closing early', () => {
  test('leaving the loop closes the portal; the connection is usable at once, outside and inside a transaction', async () => {
    for await (const rows of db.cursor('SELECT generate_series(1, 100000000) AS g', [], { batchSize: 10 })) {
      assert.equal(rows.length, 10)
      break
    }
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    await db.begin(async (tx) => {
      for await (const _ of tx.cursor('SELECT generate_series(1, 1000) AS g', [], { batchSize: 10 })) break
      // The portal was closed explicitly: the transaction goes on.
      assert.deepEqual((await tx.query('SELECT 2 AS two')).rows, [{ two: 2 }])
    })
    assert.equal(db.transactionStatus, 'I')
  })

  test('close() before reading sends nothing; close() twice is harmless', async () => {
    const c = db.cursor('SELECT pg_sleep(100)')
    await c.close()
    await c.close()
    assert.deepEqual(await c.read(), [])
    assert.deepEqual((await db.query('SELECT 3 AS three')).rows, [{ three: 3 }])
  })
})

describe('the pipeline around a cursor', () => {
  test('queries issued before a cursor run first; those issued while it is open wait until it closes', async () => {
    const earlier = db.query<{ n: number }>('SELECT 1 AS n')
    const c = db.cursor<{ g: number }>('SELECT g FROM generate_series(1, 30) g', [], { batchSize: 10 })
    const firstBatch = await c.read()
    let laterDone = false
    const later = db.query<{ n: number }>('SELECT 2 AS n').then((r) => {
      laterDone = true
      return r
    })
    await sleep(50)
    assert.equal(laterDone, false, 'a query issued while the cursor is open waits for it')
    assert.deepEqual((await earlier).rows, [{ n: 1 }])
    assert.equal(firstBatch.length, 10)
    assert.equal((await c.read()).length, 10)
    assert.equal((await c.read()).length, 10)
    assert.deepEqual(await c.read(), [])
    assert.deepEqual((await later).rows, [{ n: 2 }])
  })

  test('on a pool, a cursor has a connection of its own: other queries go on meanwhile', serverOnly(NOT_ON_PGLITE.pool), async () => {
    const { options } = await mainDatabase()
    const pool = createPool({ ...options, max: 2 })
    try {
      const c = pool.cursor<{ pid: number }>('SELECT pg_backend_pid() AS pid FROM generate_series(1, 100)', [], { batchSize: 10 })
      const [first] = await c.read()
      const others = await Promise.all(Array.from({ length: 20 }, () => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')))
      for (const r of others) assert.notEqual(r.rows[0]!.pid, first!.pid)
      let n = 10
      for await (const rows of c) n += rows.length
      assert.equal(n, 100)
      assert.equal(pool.reservedCount, 0, 'the connection went back to the pool')
    } finally {
      await pool.end()
    }
  })
})

describe('failures', () => {
  test('an error in a later batch rejects that read; the connection stays usable', async () => {
    // On PGlite too: its extra ReadyForQuery after an error in an exchange without Sync once made
    // the client drop the connection as broken.
    const pid = db.processId
    let lost: Error | undefined
    const onDisconnect = (e: Error): void => void (lost = e)
    db.on('disconnect', onDisconnect)
    const c = db.cursor<{ v: number }>('SELECT 100 / (150 - g) AS v FROM generate_series(1, 300) g', [], { batchSize: 100 })
    assert.equal((await c.read()).length, 100)
    await assert.rejects(
      (async () => {
        for (;;) if ((await c.read()).length === 0) break
      })(),
      (e: unknown) => e instanceof PgError && e.code === '22012',
    )
    assert.deepEqual((await db.query('SELECT 4 AS four')).rows, [{ four: 4 }])
    db.off('disconnect', onDisconnect)
    assert.equal(lost, undefined, `the connection was lost: ${String(lost)}`)
    assert.equal(db.processId, pid)
  })

  test('an aborted cursor rejects with an AbortError, between batches and while one runs; a timeout likewise', serverOnly(NOT_ON_PGLITE.cancel), async () => {
    const ac = new AbortController()
    const c = db.cursor('SELECT generate_series(1, 1000) AS g', [], { batchSize: 10, signal: ac.signal })
    assert.equal((await c.read()).length, 10)
    await sleep(20)
    ac.abort()
    await assert.rejects(
      (async () => {
        for (;;) if ((await c.read()).length === 0) break
      })(),
      AbortError,
    )
    const ac2 = new AbortController()
    const running = db.cursor('SELECT pg_sleep(0.01), g FROM generate_series(1, 10000) g', [], { batchSize: 5000, signal: ac2.signal })
    const reading = running.read()
    setTimeout(() => ac2.abort(), 30)
    await assert.rejects(reading, AbortError)
    await assert.rejects(db.cursor('SELECT pg_sleep(5)', [], { timeout: 50 }).read(), TimeoutError)
    assert.deepEqual((await db.query('SELECT 5 AS five')).rows, [{ five: 5 }])
  })

  test('bad arguments reject the first read with an ArgumentError', async () => {
    await assert.rejects(db.cursor('SELECT 1', [], { batchSize: 0 }).read(), ArgumentError)
    await assert.rejects(db.cursor('SELECT 1', [], { batchSize: 1.5 }).read(), ArgumentError)
    await assert.rejects(db.cursor('SELECT $1::int', []).read(), /1 parameter but 0 values/)
    assert.deepEqual((await db.query('SELECT 6 AS six')).rows, [{ six: 6 }])
  })

  for (const wait of [0, 100]) {
    test(`losing the connection while a cursor is open rejects its read with a ConnectionError (next read ${wait} ms later)`, serverOnly(NOT_ON_PGLITE.admin), async () => {
      const c = await openClient()
      try {
        const cur = c.cursor('SELECT generate_series(1, 1000) AS g', [], { batchSize: 10 })
        await cur.read()
        await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
        // Later, the loss is known before the read: it must not wait for a batch that cannot come.
        await sleep(wait)
        await assert.rejects(
          (async () => {
            for (;;) if ((await cur.read()).length === 0) break
          })(),
          ConnectionError,
        )
      } finally {
        await c.end()
      }
    })
  }
})
