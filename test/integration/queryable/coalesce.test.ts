import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import dc from 'node:diagnostics_channel'
import { AbortError, ArgumentError, connect, createPool, PgError, TimeoutError, typed, type Pool, type QueryTrace, type Result } from '../../../src/index.js'
import { fileClient, uniqueName } from '../../support/client.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { until } from '../../support/fault-checks.js'

// The coalesce option. Every execution that reaches the server takes a value
// from a sequence of the test's own (nextval is not transactional, so even a
// failed or cancelled execution counts), which is the server's own count of
// how many times a statement ran; the values callers get show which
// execution each result came from.

const table = uniqueName('coalesce_t')
const sequences: string[] = []
const pools: Pool[] = []
const db = await fileClient({
  setup: `CREATE TABLE ${table} (k int PRIMARY KEY, v text, b bytea, j jsonb, a int[]);
    INSERT INTO ${table} SELECT g, 'v' || g, '\\x0102'::bytea, '{"x": {"y": 1}}', ARRAY[1, 2] FROM generate_series(1, 10) g`,
  cleanup: `DROP TABLE ${table}`,
})
after(async () => {
  await Promise.all(pools.map((p) => p.end()))
  if (sequences.length > 0) await adminQuery(`DROP SEQUENCE IF EXISTS ${sequences.join(', ')}`)
})

/** A sequence of the test's own: `n` in a statement is the number of the execution that computed it. */
async function counter(): Promise<{ seq: string; executions: () => Promise<number> }> {
  const seq = uniqueName('coalesce_seq')
  sequences.push(seq)
  await db.query(`CREATE SEQUENCE ${seq}`)
  return {
    seq,
    executions: async () => {
      const r = await db.query<{ n: number }>(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END::int AS n FROM ${seq}`)
      return r.rows[0]!.n
    },
  }
}

/** A read that takes `seconds` on the server and says which execution it was. */
const slowRead = (seq: string, seconds = 0.1): string => `SELECT $1::int AS k, nextval('${seq}')::int AS n FROM pg_sleep(${seconds})`

async function newPool(extra: Record<string, unknown> = {}): Promise<Pool> {
  const { options } = await mainDatabase()
  const p = createPool({ ...options, ...extra })
  pools.push(p)
  return p
}

/** Records the contexts of pipegres:query events that reached asyncEnd, until stop(). */
function recordQueries(): { done: QueryTrace[]; stop: () => void } {
  const ch = dc.tracingChannel<unknown, QueryTrace>('pipegres:query')
  const done: QueryTrace[] = []
  const noop = (): void => {}
  const handlers = { start: noop, end: noop, asyncStart: noop, error: noop, asyncEnd: (ctx: QueryTrace) => void done.push(ctx) }
  ch.subscribe(handlers)
  return { done, stop: () => ch.unsubscribe(handlers) }
}

test('identical reads in flight run once on the server; every caller gets the shared value', async () => {
  const c = await counter()
  const sql = slowRead(c.seq)
  const results = await Promise.all(Array.from({ length: 20 }, () => db.query<{ k: number; n: number }>(sql, [7], { coalesce: true })))
  assert.equal(await c.executions(), 1)
  for (const r of results) assert.deepEqual(r.rows, [{ k: 7, n: 1 }])
  assert.equal(new Set(results.map((r) => r.rows[0])).size, 20, 'a row object per caller')
  assert.equal(new Set(results).size, 20, 'a result per caller')
  // The same reads without the option run each time.
  await Promise.all(Array.from({ length: 5 }, () => db.query(sql, [7])))
  assert.equal(await c.executions(), 6)
  // Once the execution is over, an identical read runs again.
  assert.deepEqual((await db.query(sql, [7], { coalesce: true })).rows, [{ k: 7, n: 7 }])
})

test('parameters are compared as they would be sent: equal Dates, arrays and Buffers coalesce; other values, types or row shapes do not', async () => {
  const c = await counter()
  const read = (type: string): string => `SELECT $1::${type} AS p, nextval('${c.seq}')::int AS n FROM pg_sleep(0.1)`
  const sql = read('text')
  const at = Date.UTC(2024, 0, 2, 3, 4, 5, 6)
  const same = async (a: unknown, b: unknown, type = 'text'): Promise<boolean> => {
    const [x, y] = await Promise.all([db.query<{ n: number }>(read(type), [a], { coalesce: true }), db.query<{ n: number }>(read(type), [b], { coalesce: true })])
    return x.rows[0]!.n === y.rows[0]!.n
  }
  assert.equal(await same(new Date(at), new Date(at), 'timestamptz'), true, 'two Dates of one instant')
  assert.equal(await same([1, 2, 3], [1, 2, 3], 'int[]'), true, 'equal arrays')
  assert.equal(await same(Buffer.from([1, 2]), new Uint8Array([1, 2]), 'bytea'), true, 'equal bytes')
  assert.equal(await same({ a: [1, 'x'] }, { a: [1, 'x'] }, 'jsonb'), true, 'equal JSON data')
  assert.equal(await same(null, undefined), true, 'both NULL')
  assert.equal(await same(1, 2), false)
  assert.equal(await same(1, '1'), false, 'a number and a string: their binary encodings may differ by type')
  assert.equal(await same('a', 'a '), false)
  assert.equal(await same(new Date(at), new Date(at + 1), 'timestamptz'), false)
  assert.equal(await same([1, 2, 3], [1, 2, 4], 'int[]'), false)
  assert.equal(await same(Buffer.from([1, 2]), Buffer.from([1, 3]), 'bytea'), false)
  assert.equal(await same({ a: 1, b: 2 }, { b: 2, a: 1 }, 'jsonb'), false, 'JSON text that differs is not compared deeper')
  assert.equal(await same(typed(1, 'int8'), 1), false, 'declared types differ')
  const [o, a] = await Promise.all([db.query(sql, ['x'], { coalesce: true }), db.query(sql, ['x'], { coalesce: true, rowMode: 'array' })])
  assert.notEqual((o.rows[0] as { n: number }).n, (a.rows[0] as unknown as unknown[])[1], 'row modes differ')
  const [t1, t2] = await Promise.all([db.query(sql, ['x'], { coalesce: true }), db.query(sql, ['x'], { coalesce: true, types: { int8: 'string' } })])
  assert.notEqual(t1.rows[0]!.n, t2.rows[0]!.n, 'type options differ')
})

test('a caller reusing its values array for its next call changes nothing its joiners asked for', async () => {
  const c = await counter()
  const sql = slowRead(c.seq, 0.05)
  // The pool's one connection is reserved: the queries wait, unencoded, while the array changes.
  const pool = await newPool({ max: 1, coalesce: true })
  const reserved = await pool.reserve()
  const values = [1]
  const first = pool.query<{ k: number; n: number }>(sql, values)
  values[0] = 2
  const second = pool.query<{ k: number; n: number }>(sql, values)
  const joiner = pool.query<{ k: number; n: number }>(sql, [1])
  reserved.release()
  const [f, s, j] = await Promise.all([first, second, joiner])
  assert.equal(f.rows[0]!.k, 1)
  assert.equal(s.rows[0]!.k, 2)
  assert.deepEqual(j.rows, f.rows)
  assert.equal(await c.executions(), 2)
})

test('prepare: false coalesces identical texts, never texts that differ only in comments', async () => {
  const c = await counter()
  const sql = slowRead(c.seq)
  const [a, b, d] = await Promise.all([
    db.query<{ n: number }>(sql, [1], { coalesce: true, prepare: false }),
    db.query<{ n: number }>(sql, [1], { coalesce: true, prepare: false }),
    db.query<{ n: number }>(`/* request 2 */ ${sql}`, [1], { coalesce: true, prepare: false }),
  ])
  assert.equal(a.rows[0]!.n, b.rows[0]!.n)
  assert.notEqual(a.rows[0]!.n, d.rows[0]!.n)
  assert.equal(await c.executions(), 2)
})

test('each caller gets a result of its own: changing one caller\'s rows and values changes no other\'s', async () => {
  const c = await counter()
  const sql = `SELECT k, v, b, j, a, nextval('${c.seq}')::int AS n FROM ${table}, pg_sleep(0.05) WHERE k <= $1 ORDER BY k`
  for (const rowMode of ['object', 'array', 'lazy'] as const) {
    const results = await Promise.all(Array.from({ length: 4 }, () => db.query(sql, [2], { coalesce: true, rowMode })))
    const first = results[0]!
    const row = first.rows[0] as Record<string | number, unknown>
    const at = (name: string, i: number): string | number => (rowMode === 'array' ? i : name)
    ;(row[at('b', 2)] as Buffer)[0] = 0xff
    ;((row[at('j', 3)] as { x: { y: number } }).x).y = 99
    ;(row[at('a', 4)] as number[]).push(3)
    row[at('v', 1)] = 'changed'
    first.rows.push('extra' as never)
    for (const r of results.slice(1)) {
      assert.equal(r.rows.length, 2, rowMode)
      const other = r.rows[0] as Record<string | number, unknown>
      assert.equal(other[at('v', 1)], 'v1', rowMode)
      assert.deepEqual([...(other[at('b', 2)] as Buffer)], [1, 2], rowMode)
      assert.deepEqual(other[at('j', 3)], { x: { y: 1 } }, rowMode)
      assert.deepEqual(other[at('a', 4)], [1, 2], rowMode)
      assert.equal(other[at('n', 5)], row[at('n', 5)], 'one execution')
    }
  }
  const cols = await Promise.all(Array.from({ length: 3 }, () => db.query(`SELECT k, nextval('${c.seq}')::int AS n FROM ${table}, pg_sleep(0.05) WHERE k <= $1 ORDER BY k`, [3], { coalesce: true, rowMode: 'columns' })))
  ;(cols[0]!.columns!.k as Int32Array)[0] = 42
  for (const r of cols.slice(1)) assert.deepEqual([...(r.columns!.k as Int32Array)], [1, 2, 3])
  assert.equal(new Set(cols.map((r) => (r.columns!.n as Int32Array)[0])).size, 1, 'one execution')
})

test('an error is shared as an error of each caller\'s own, with that caller\'s frames', async () => {
  const c = await counter()
  // nextval() keeps the division from being folded at plan time: it fails while executing, after counting.
  const sql = `SELECT 1 / (0 * nextval('${c.seq}')::int + $1::int - 5) AS x FROM pg_sleep(0.05)`
  async function renderProfile(): Promise<unknown> {
    return await db.query(sql, [5], { coalesce: true })
  }
  async function renderSidebar(): Promise<unknown> {
    return await db.query(sql, [5], { coalesce: true })
  }
  async function renderFooter(): Promise<unknown> {
    return await db.query(sql, [5], { coalesce: true })
  }
  const errors = (await Promise.allSettled([renderProfile(), renderSidebar(), renderFooter()])).map((s) => {
    assert.equal(s.status, 'rejected')
    return (s as PromiseRejectedResult).reason as Error
  })
  assert.equal(await c.executions(), 1)
  assert.equal(new Set(errors).size, 3, 'an error object per caller')
  const names = ['renderProfile', 'renderSidebar', 'renderFooter']
  errors.forEach((err, i) => {
    assert.ok(err instanceof PgError)
    assert.equal(err.code, '22012')
    assert.ok(err.stack!.includes(names[i]!), `caller ${names[i]} in its stack:\n${err.stack}`)
    for (const other of names.filter((_, j) => j !== i)) assert.ok(!err.stack!.includes(other), `no other caller's frames (${other})`)
  })
  errors[0]!.message = 'changed'
  assert.notEqual(errors[1]!.message, 'changed')
})

test('one caller giving up (signal or timeout) leaves the others their result', async () => {
  const c = await counter()
  const sql = slowRead(c.seq, 0.3)
  const ac = new AbortController()
  const aborted = db.query(sql, [3], { coalesce: true, signal: ac.signal })
  const kept = db.query<{ k: number; n: number }>(sql, [3], { coalesce: true })
  const timedOut = db.query(sql, [3], { coalesce: true, timeout: 30 })
  setTimeout(() => ac.abort(), 10)
  const [a, k, t] = await Promise.allSettled([aborted, kept, timedOut])
  // Each outcome named, should one ever differ: which caller got which error tells where it came from.
  const seen = [a, k, t].map((s) => (s.status === 'fulfilled' ? 'a result' : `${(s.reason as Error).name}: ${(s.reason as Error).message}`)).join('; ')
  assert.ok(a.status === 'rejected' && a.reason instanceof AbortError, seen)
  assert.ok(t.status === 'rejected' && t.reason instanceof TimeoutError, seen)
  assert.ok(k.status === 'fulfilled', seen)
  assert.deepEqual(k.value.rows, [{ k: 3, n: 1 }])
  assert.equal(await c.executions(), 1)
})

test('the shared execution is cancelled on the server once every caller has given up', async () => {
  const c = await counter()
  const sql = `SELECT $1::int AS k, nextval('${c.seq}') AS n, pg_sleep(30) /* ${c.seq} */`
  const started = performance.now()
  const calls = [50, 100, 150].map((timeout) => db.query(sql, [1], { coalesce: true, timeout }))
  for (const call of calls) await assert.rejects(call, TimeoutError)
  await until(
    'the server no longer runs the shared execution',
    async () => Number((await adminQuery(`SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%${c.seq} */%' AND state = 'active' AND pid <> pg_backend_pid()`)).rows[0]![0]) === 0,
    10_000,
  )
  assert.ok(performance.now() - started < 10_000)
  assert.equal((await db.query('SELECT 1 AS one')).rows[0]!.one, 1, 'the connection goes on')
  assert.equal(await c.executions(), 1)
  // Given up by all before it was sent: it is never sent.
  const c3 = await counter()
  const pool = await newPool({ max: 1, coalesce: true })
  const reserved = await pool.reserve()
  const controllers = [new AbortController(), new AbortController()]
  const waiting = controllers.map((ac) => pool.query(slowRead(c3.seq, 0), [1], { signal: ac.signal }))
  for (const ac of controllers) ac.abort()
  for (const w of waiting) await assert.rejects(w, AbortError)
  reserved.release()
  assert.equal((await pool.query('SELECT 1 AS one')).rows[0]!.one, 1)
  assert.equal(await c3.executions(), 0)
  // A caller that joins while others give up keeps the execution going.
  const c2 = await counter()
  const sql2 = slowRead(c2.seq, 0.2)
  const early = db.query(sql2, [2], { coalesce: true, timeout: 20 })
  const late = db.query<{ n: number }>(sql2, [2], { coalesce: true })
  await assert.rejects(early, TimeoutError)
  assert.equal((await late).rows[0]!.n, 1)
})

test('never coalesced: transactions, reserved connections, batches, streams, cursors, COPY, writes, locks and session changes', async () => {
  const twice = async (run: (sql: string, seq: string) => Promise<unknown>): Promise<number> => {
    const c = await counter()
    await run(slowRead(c.seq, 0.05), c.seq)
    return c.executions()
  }
  const opts = { coalesce: true } as const
  assert.equal(await twice((sql) => db.begin((tx) => Promise.all([tx.query(sql, [1], opts), tx.query(sql, [1], opts)]))), 2, 'begin()')
  const pool = await newPool({ max: 2, coalesce: true })
  assert.equal(
    await twice(async (sql) => {
      const r = await pool.reserve()
      try {
        await Promise.all([r.query(sql, [1], opts), r.query(sql, [1], opts)])
      } finally {
        r.release()
      }
    }),
    2,
    'reserve()',
  )
  // A batch statement's options are checked against the same keys as query()'s, so it takes coalesce too (and runs anyway).
  const inBatch = opts as object
  assert.equal(await twice((sql) => Promise.all([db.query(sql, [1], opts), db.batch((b) => [b.query(sql, [1], inBatch), b.query(sql, [1], inBatch)])])), 3, 'batch()')
  assert.equal(
    await twice((sql) =>
      Promise.all([
        db.query(sql, [1], opts),
        (async () => {
          for await (const _ of db.stream(sql, [1], opts));
        })(),
        (async () => {
          for await (const _ of db.cursor(sql, [1], opts));
        })(),
      ]),
    ),
    3,
    'stream() and cursor()',
  )
  assert.equal(
    await twice(async (_, seq) => {
      const body = `SELECT nextval('${seq}')::int AS n FROM pg_sleep(0.05)`
      const rows: unknown[] = []
      await Promise.all([
        db.query(body, [], opts),
        (async () => {
          for await (const row of db.copyToRows(body)) rows.push(row)
        })(),
      ])
      assert.equal(rows.length, 1)
    }),
    2,
    'COPY',
  )
  const writes = [
    (seq: string) => `INSERT INTO ${table} (k, v) SELECT 1000 + nextval('${seq}')::int, $1::text FROM pg_sleep(0.05) RETURNING k`,
    (seq: string) => `WITH u AS (UPDATE ${table} SET v = v WHERE k = 1 RETURNING k) SELECT $1::text, nextval('${seq}') FROM u, pg_sleep(0.05)`,
    (seq: string) => `SELECT $1::text, nextval('${seq}') FROM ${table}, pg_sleep(0.05) WHERE k = 2 FOR UPDATE`,
    (seq: string) => `SELECT $1::text, nextval('${seq}') FROM ${table}, pg_sleep(0.05) WHERE k = 2 FOR SHARE`,
    (seq: string) => `SELECT set_config('pipegres.coalesce_test', $1::text, false), nextval('${seq}') FROM pg_sleep(0.05)`,
  ]
  for (const write of writes) {
    assert.equal(await twice((_, seq) => Promise.all([db.query(write(seq), ['w'], opts), db.query(write(seq), ['w'], opts)])), 2, write('s'))
  }
  await db.query(`DELETE FROM ${table} WHERE k > 1000`)
  // A client inside a transaction it began itself shares nothing.
  await db.query('BEGIN')
  try {
    assert.equal(await twice((sql) => Promise.all([db.query(sql, [1], opts), db.query(sql, [1], opts)])), 2, 'inside BEGIN')
  } finally {
    await db.query('ROLLBACK')
  }
})

test('a client\'s write seals the reads in flight: reads issued after it never join reads issued before it', async () => {
  const c = await counter()
  const sql = slowRead(c.seq, 0.1)
  const before = db.query<{ n: number }>(sql, [1], { coalesce: true })
  const write = db.query(`UPDATE ${table} SET v = v WHERE k = 1`)
  const afterWrite = db.query<{ n: number }>(sql, [1], { coalesce: true })
  const alongside = db.query<{ n: number }>(sql, [1], { coalesce: true })
  await write
  const [b, a, s] = await Promise.all([before, afterWrite, alongside])
  assert.notEqual(b.rows[0]!.n, a.rows[0]!.n)
  assert.equal(a.rows[0]!.n, s.rows[0]!.n)
  assert.equal(await c.executions(), 2)
  // begin() seals as well.
  const c2 = await counter()
  const sql2 = slowRead(c2.seq, 0.1)
  const first = db.query<{ n: number }>(sql2, [1], { coalesce: true })
  const tx = db.begin(async (t) => t.query('SELECT 1'))
  const second = db.query<{ n: number }>(sql2, [1], { coalesce: true })
  await tx
  assert.notEqual((await first).rows[0]!.n, (await second).rows[0]!.n)
})

test('a pool coalesces identical reads across its connections, by default when its option says so', async () => {
  const c = await counter()
  const pool = await newPool({ max: 4, coalesce: true })
  const sql = `SELECT $1::int AS k, pg_backend_pid() AS pid, nextval('${c.seq}')::int AS n FROM pg_sleep(0.1)`
  const keys = Array.from({ length: 80 }, (_, i) => (i % 4) + 1)
  const results = await Promise.all(keys.map((k) => pool.query<{ k: number; pid: number; n: number }>(sql, [k])))
  assert.equal(await c.executions(), 4, 'one execution per key')
  const byKey = new Map<number, Set<string>>()
  results.forEach((r, i) => {
    const row = r.rows[0]!
    assert.equal(row.k, keys[i])
    const seen = byKey.get(row.k) ?? new Set()
    seen.add(`${row.pid}/${row.n}`)
    byKey.set(row.k, seen)
  })
  for (const seen of byKey.values()) assert.equal(seen.size, 1)
  const pids = new Set(results.map((r) => r.rows[0]!.pid))
  assert.ok(pids.size > 1, `the executions ran on several connections (${pids.size})`)
  // A query's own option wins over the pool's.
  await Promise.all([pool.query(sql, [1], { coalesce: false }), pool.query(sql, [1], { coalesce: false })])
  assert.equal(await c.executions(), 6)
})

test('tracing: each coalesced query has its own event, marked with the execution it joined', async () => {
  const c = await counter()
  const sql = slowRead(c.seq, 0.05)
  const { done, stop } = recordQueries()
  try {
    await Promise.all([...Array.from({ length: 5 }, () => db.query(sql, [4], { coalesce: true })), db.query(sql, [5])])
  } finally {
    stop()
  }
  const shared = done.filter((t) => t.executionId !== undefined)
  assert.equal(shared.length, 5)
  assert.equal(new Set(shared.map((t) => t.executionId)).size, 1)
  assert.deepEqual(shared.map((t) => t.coalesced), [false, true, true, true, true])
  for (const t of shared) {
    assert.equal(t.kind, 'query')
    assert.equal(t.query, sql)
    assert.equal(t.rowCount, 1)
  }
  const alone = done.filter((t) => t.executionId === undefined && t.query === sql)
  assert.equal(alone.length, 1)
  assert.equal(alone[0]!.coalesced, undefined)
})

test('bad values of the option are refused, naming it', async () => {
  await assert.rejects(db.query('SELECT 1', [], { coalesce: 'yes' as never }), (err: Error) => err instanceof ArgumentError && /coalesce must be true or false/.test(err.message))
  const { options } = await mainDatabase()
  assert.throws(() => createPool({ ...options, coalesce: 1 as never }), /coalesce must be true or false/)
  await assert.rejects(connect({ ...options, coalesce: 'on' as never }), /coalesce must be true or false/)
})

test('random interleavings of callers, keys, row modes and aborts: every result is the one its caller asked for', async () => {
  const pool = await newPool({ max: 4 })
  const sql = 'SELECT $1::int AS k, $2::text AS t, clock_timestamp() AS at FROM pg_sleep(0.002)'
  const { done, stop } = recordQueries()
  for (let round = 0; round < 30; round++) {
    const target = round % 2 === 0 ? db : pool
    const calls: Promise<void>[] = []
    for (let i = 0; i < 40; i++) {
      const k = Math.floor(Math.random() * 4)
      const t = ['a', 'b', 'a b', ''][Math.floor(Math.random() * 4)]!
      const rowMode = Math.random() < 0.5 ? 'object' : 'array'
      const ac = Math.random() < 0.15 ? new AbortController() : null
      if (ac !== null) setTimeout(() => ac.abort(), Math.random() * 10)
      const p = target.query(sql, [k, t], { coalesce: true, rowMode, ...(ac !== null ? { signal: ac.signal } : {}) }).then(
        (r: Result<unknown>) => {
          assert.equal(r.rows.length, 1)
          const row = r.rows[0] as Record<string | number, unknown>
          if (rowMode === 'array') {
            assert.ok(Array.isArray(row))
            assert.deepEqual(row.slice(0, 2), [k, t])
          } else {
            assert.ok(!Array.isArray(row))
            assert.equal(row.k, k)
            assert.equal(row.t, t)
          }
        },
        (err: unknown) => {
          assert.ok(ac !== null && err instanceof AbortError, `only an aborted caller fails: ${String(err)}`)
        },
      )
      calls.push(p)
      if (Math.random() < 0.3) await new Promise((r) => setTimeout(r, Math.random() * 3))
      else if (Math.random() < 0.3) await new Promise((r) => setImmediate(r))
    }
    await Promise.all(calls)
  }
  stop()
  // The interleavings did share executions, and sent others alone: else the test would prove little.
  const joined = done.filter((t) => t.coalesced === true).length
  const led = done.filter((t) => t.coalesced === false).length
  assert.ok(joined > 100 && led > 100, `joined ${joined}, led ${led}`)
})
