// test-tags: matrix
// batch(): many statements under one Sync, against a real server. The
// statements share one implicit transaction (all or nothing); the first
// failure rejects the batch with its index and the rest never run; the
// prepared-statement cache stays true to the server after a failed batch;
// queries pipelined around a batch keep their own results.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import dc from 'node:diagnostics_channel'
import { ArgumentError, ConnectionError, createPool, ParameterError, PgError, ResultLimitError, TimeoutError, typed, type QueryTrace } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

const t = uniqueName('batch_t')
const seq = uniqueName('batch_seq')
const comp = uniqueName('batch_comp')
const db = await fileClient({
  setup: `CREATE TABLE ${t} (id int PRIMARY KEY, v text); CREATE SEQUENCE ${seq}; CREATE TYPE ${comp} AS (a int, b text)`,
  cleanup: `DROP TABLE ${t}; DROP SEQUENCE ${seq}; DROP TYPE ${comp}`,
})

/** The protocol-level prepared statements of the client's connection, by text. */
async function prepared(c = db): Promise<string[]> {
  const r = await c.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements WHERE NOT from_sql', [], { prepare: false })
  return r.rows.map((row) => row.statement)
}

test('results come in order, each the shape query() gives, typed as query() types them; the second run binds the prepared statements', async () => {
  const run = () =>
    db.batch((b) => {
      b.query('SELECT $1::int4 AS n, $2::text AS s', [7, 'seven'])
      b.query('SELECT g FROM generate_series(1, $1::int) g', [3], { rowMode: 'array' })
      b.query(`INSERT INTO ${t} (id, v) SELECT g, 'x' FROM generate_series(100, 102) g`)
      b.query(`DELETE FROM ${t} WHERE id >= 100`)
      b.sql`SELECT ${10n}::int8 AS big, now() AS at`
    })
  for (let i = 0; i < 2; i++) {
    const r = await run()
    assert.equal(r.length, 5)
    assert.deepEqual(r[0]!.rows, [{ n: 7, s: 'seven' }])
    assert.equal(r[0]!.command, 'SELECT')
    assert.equal(r[0]!.rowCount, 1)
    assert.deepEqual(r[0]!.fields.map((f) => f.name), ['n', 's'])
    assert.deepEqual(r[1]!.rows, [[1], [2], [3]])
    assert.equal(r[2]!.command, 'INSERT')
    assert.equal(r[2]!.rowCount, 3)
    assert.equal(r[3]!.command, 'DELETE')
    assert.equal(r[3]!.rowCount, 3)
    assert.equal(r[4]!.rows[0]!.big, 10n)
    assert.ok(r[4]!.rows[0]!.at instanceof Date)
    assert.deepEqual(r[0]!.notices, [])
  }
})

test('the statements run under one Sync: one transaction for all of them', async () => {
  const [a, b, c] = await db.batch((b) => {
    b.query('SELECT txid_current() AS x')
    b.query('SELECT pg_sleep(0.01)')
    b.query('SELECT txid_current() AS x')
  })
  assert.equal(a!.rows[0]!.x, c!.rows[0]!.x)
  const apart = await Promise.all([db.query('SELECT txid_current() AS x'), db.query('SELECT txid_current() AS x')])
  assert.notEqual(apart[0].rows[0]!.x, apart[1].rows[0]!.x, 'separate queries are separate transactions')
  void b
})

test('a failing statement rejects the batch with its PgError and index, rolls back what ran before it, and the rest never runs', async () => {
  const err: unknown = await db
    .batch((b) => {
      b.query(`INSERT INTO ${t} (id, v) VALUES (1, 'a')`)
      b.query('SELECT 1 / $1::int AS boom', [0])
      b.query(`SELECT nextval('${seq}')`)
    })
    .then(
      () => assert.fail('the batch succeeded'),
      (e: unknown) => e,
    )
  assert.ok(err instanceof PgError, String(err))
  assert.equal(err.code, '22012')
  assert.equal(err.batchIndex, 1)
  assert.equal(err.query, 'SELECT 1 / $1::int AS boom')
  assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${t}`)).rows[0]!.n, 0, 'the INSERT before the failure was rolled back')
  // A sequence is not transactional: had the third statement run, it would show.
  assert.equal((await db.query(`SELECT is_called FROM ${seq}`)).rows[0]!.is_called, false)
  // A unique violation in the middle, with other statements on both sides.
  const dup = await db
    .batch((b) => {
      b.query(`INSERT INTO ${t} (id, v) VALUES (2, 'b')`)
      b.query(`INSERT INTO ${t} (id, v) VALUES (3, 'c')`)
      b.query(`INSERT INTO ${t} (id, v) VALUES (2, 'again')`)
    })
    .catch((e: unknown) => e)
  assert.ok(dup instanceof PgError && dup.code === '23505' && dup.batchIndex === 2, String(dup))
  assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${t}`)).rows[0]!.n, 0)
})

test('after a batch failed at a statement the server could not parse, the cache holds exactly what the server prepared, and the others run prepared', async () => {
  const c = await openClient()
  try {
    const good1 = `SELECT 'good1'::text AS g, $1::int AS n`
    const bad = 'SELEC broken'
    const good2 = `SELECT 'good2'::text AS g`
    const err = await c
      .batch((b) => {
        b.query(good1, [1])
        b.query(bad)
        b.query(good2)
      })
      .catch((e: unknown) => e)
    assert.ok(err instanceof PgError && err.code === '42601' && err.batchIndex === 1, String(err))
    assert.equal(err.query, bad)
    const names = await prepared(c)
    assert.ok(names.includes(good1) && names.includes(good2), `prepared: ${names.join(' | ')}`)
    assert.ok(!names.includes(bad))
    // The statements around the broken one run fine, by their prepared names, in a batch and alone.
    const r = await c.batch((b) => {
      b.query(good2)
      b.query(good1, [2])
    })
    assert.deepEqual(r.map((x) => x.rows[0]!.g), ['good2', 'good1'])
    assert.equal((await c.query(good1, [3])).rows[0]!.n, 3)
    // The broken one fails the same way again, at its own index.
    const again = await c.batch((b) => void (b.query(good2), b.query(bad))).catch((e: unknown) => e)
    assert.ok(again instanceof PgError && again.code === '42601' && again.batchIndex === 1)
    assert.equal((await prepared(c)).filter((s) => s === good1 || s === good2).length, 2, 'each statement prepared once')
  } finally {
    await c.end()
  }
})

test('statements after a failed one, met for the first time, are prepared and run afterwards', async () => {
  const c = await openClient()
  try {
    const after1 = `SELECT 'after1'::text AS a, $1::int4 AS n`
    const err = await c
      .batch((b) => {
        b.query('SELECT 1 / 0')
        b.query(after1, [5])
      })
      .catch((e: unknown) => e)
    assert.ok(err instanceof PgError && err.batchIndex === 0)
    const r = await c.batch((b) => {
      b.query(after1, [6])
      b.query(after1, [7])
    })
    assert.deepEqual(r.map((x) => x.rows[0]!.n), [6, 7])
    assert.deepEqual((await prepared(c)).filter((s) => s === after1), [after1])
  } finally {
    await c.end()
  }
})

test('a batch larger than the statement cache: statements stay prepared while it runs, the evicted ones are closed behind a later batch', async () => {
  const c = await openClient({ statementCacheSize: 2 })
  try {
    const texts = Array.from({ length: 6 }, (_, i) => `SELECT ${i}::int AS n, $1::text AS s`)
    for (let run = 0; run < 3; run++) {
      const r = await c.batch((b) => texts.forEach((text) => b.query(text, [`run ${run}`])))
      assert.deepEqual(r.map((x) => x.rows[0]), texts.map((_, i) => ({ n: i, s: `run ${run}` })))
    }
    // The Closes of the statements evicted when the last batch released them go out behind the next prepared query.
    await c.query('SELECT 1 AS one')
    const left = (await prepared(c)).filter((s) => texts.includes(s))
    assert.ok(left.length <= 2, `evicted statements were closed on the server; left: ${left.length}`)
  } finally {
    await c.end()
  }
})

test('queries pipelined before and after a batch keep their own results, whether the batch succeeds or fails', async () => {
  const before = db.query('SELECT $1::text AS q', ['before'])
  const ok = db.batch((b) => {
    b.query('SELECT $1::text AS q', ['in1'])
    b.query('SELECT $1::text AS q', ['in2'])
  })
  const between = db.query('SELECT $1::text AS q', ['between'])
  const failing = db.batch((b) => {
    b.query('SELECT $1::text AS q', ['in3'])
    b.query('SELECT 1 / 0')
  })
  const afterQ = db.query('SELECT $1::text AS q', ['after'])
  const [r1, r2, r3, r4, r5] = await Promise.allSettled([before, ok, between, failing, afterQ])
  assert.deepEqual(r1.status === 'fulfilled' && r1.value.rows, [{ q: 'before' }])
  assert.deepEqual(r2.status === 'fulfilled' && r2.value.map((r) => r.rows[0]), [{ q: 'in1' }, { q: 'in2' }])
  assert.deepEqual(r3.status === 'fulfilled' && r3.value.rows, [{ q: 'between' }])
  assert.ok(r4.status === 'rejected' && r4.reason instanceof PgError && r4.reason.batchIndex === 1)
  assert.deepEqual(r5.status === 'fulfilled' && r5.value.rows, [{ q: 'after' }])
})

test('on a pool, a reserved connection and in a transaction; inside a transaction the batch is part of it', async () => {
  const { options } = await mainDatabase()
  const pool = createPool({ ...options, max: 2 })
  try {
    const r = await pool.batch(
      (b) => {
        b.query('SELECT 1 AS one')
        b.query('SELECT 2 AS two')
      },
      { readOnly: true, timeout: 5000 },
    )
    assert.deepEqual(r.map((x) => x.rows[0]), [{ one: 1 }, { two: 2 }])
    const reserved = await pool.reserve()
    try {
      const [x] = await reserved.batch((b) => b.query('SELECT pg_backend_pid() AS pid'))
      assert.equal(x!.rows[0]!.pid, (await reserved.query('SELECT pg_backend_pid() AS pid')).rows[0]!.pid)
    } finally {
      reserved.release()
    }
    await pool
      .begin(async (tx) => {
        const own = (await tx.query('SELECT txid_current() AS x')).rows[0]!.x
        const [a] = await tx.batch((b) => {
          b.query('SELECT txid_current() AS x')
          b.query(`INSERT INTO ${t} (id, v) VALUES (10, 'in tx')`)
        })
        assert.equal(a!.rows[0]!.x, own, 'the batch ran in the transaction')
        throw new Error('roll back')
      })
      .catch((e: unknown) => assert.equal((e as Error).message, 'roll back'))
    assert.equal((await pool.query(`SELECT count(*)::int AS n FROM ${t} WHERE id = 10`)).rows[0]!.n, 0, 'rolled back with the transaction')
    // A failing batch fails the transaction around it: what ran before the batch is gone too.
    const err = await db
      .begin(async (tx) => {
        await tx.query(`INSERT INTO ${t} (id, v) VALUES (11, 'before')`)
        await tx.batch((b) => {
          b.query(`INSERT INTO ${t} (id, v) VALUES (12, 'in')`)
          b.query('SELECT 1 / 0')
        })
      })
      .catch((e: unknown) => e)
    assert.ok(err instanceof PgError && err.batchIndex === 1)
    assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${t} WHERE id IN (11, 12)`)).rows[0]!.n, 0)
  } finally {
    await pool.end()
  }
})

test('an empty batch resolves to [] without touching the server', async () => {
  const c = await openClient()
  await c.end()
  assert.deepEqual(await c.batch(() => {}), [])
  await assert.rejects(c.batch((b) => b.query('SELECT 1')), ConnectionError)
})

test('wrong arguments reject with an ArgumentError naming the cause, before anything is sent', async () => {
  const bad = async (p: Promise<unknown>, pattern: RegExp) => {
    const err = await p.catch((e: unknown) => e)
    assert.ok(err instanceof ArgumentError, String(err))
    assert.match(err.message, pattern)
  }
  await bad(db.batch('SELECT 1' as never), /takes a function/)
  await bad(db.batch((b) => b.query('SELECT 1'), { timout: 5 } as never), /unknown batch option "timout"/)
  await bad(db.batch((b) => b.query('SELECT 1', [], { signal: AbortSignal.timeout(10) } as never)), /batch statement 0: unknown batch query option "signal"/)
  await bad(db.batch((b) => b.query('SELECT 1', [], { rowMode: 'rows' as never })), /batch statement 0: rowMode must be/)
  await bad(db.batch((b) => void (b.query('SELECT 1'), b.query('SELECT $1', 5 as never))), /batch statement 1: query values must be an array/)
  await bad(db.batch((b) => b.query(`COPY ${t} TO STDOUT`)), /COPY cannot run in a batch/)
  await bad(db.batch((b) => b.query(42 as never)), /query text must be a string/)
  await bad(
    db.batch(async (b) => {
      await Promise.resolve()
      b.query('SELECT 1')
    }),
    /synchronously/,
  )
  let kept: { query: (s: string) => void } | undefined
  await db.batch((b) => {
    kept = b
    b.query('SELECT 1')
  })
  assert.throws(() => kept!.query('SELECT 2'), /only while its function runs/)
  const thrown = new Error('from the builder')
  await assert.rejects(
    db.batch(() => {
      throw thrown
    }),
    (e) => e === thrown,
  )
  // A value that does not fit its (known) type fails before anything is sent.
  await db.query('SELECT $1::int4 AS n', [1])
  const err = await db.batch((b) => void (b.query('SELECT 1'), b.query('SELECT $1::int4 AS n', [{ not: 'a number' }]))).catch((e: unknown) => e)
  assert.ok(err instanceof ParameterError, String(err))
  assert.match(err.message, /^batch statement 1: parameter \$1/)
  assert.equal(err.index, 1)
})

test('prepare: false runs statements as the unnamed statement, mixed with prepared ones', async () => {
  const c = await openClient()
  try {
    const unnamed = `SELECT 'unnamed'::text AS u, $1::int AS n`
    const named = `SELECT 'named'::text AS u, $1::int AS n`
    for (let i = 0; i < 2; i++) {
      const r = await c.batch((b) => {
        b.query(unnamed, [1], { prepare: false })
        b.query(named, [2])
        b.query(unnamed, [3], { prepare: false })
      })
      assert.deepEqual(r.map((x) => x.rows[0]), [{ u: 'unnamed', n: 1 }, { u: 'named', n: 2 }, { u: 'unnamed', n: 3 }])
    }
    const names = await prepared(c)
    assert.ok(names.includes(named) && !names.includes(unnamed))
    const err = await c.batch((b) => void (b.query('SELECT 1', [], { prepare: false }), b.query('SELEC 2', [], { prepare: false }))).catch((e: unknown) => e)
    assert.ok(err instanceof PgError && err.code === '42601' && err.batchIndex === 1)
  } finally {
    await c.end()
  }
})

test('values whose type must be known, rowMode columns, types and typed(): described before the batch is bound', async () => {
  const c = await openClient()
  try {
    for (let i = 0; i < 2; i++) {
      for (const prepare of [true, false]) {
        const r = await c.batch((b) => {
          b.query('SELECT $1::point AS p, $2::jsonb AS j', [{ x: 1, y: 2 }, { a: [1] }], { prepare })
          b.query('SELECT g::int4 AS n FROM generate_series(1, 3) g', [], { rowMode: 'columns', prepare })
          b.query('SELECT $1::int8 AS big', [5n], { types: { int8: 'string' }, prepare })
          b.query('SELECT $1 AS v', [typed(9, 'int4')], { prepare })
        })
        assert.deepEqual(r[0]!.rows, [{ p: { x: 1, y: 2 }, j: { a: [1] } }])
        assert.ok(r[1]!.columns!.n instanceof Int32Array)
        assert.deepEqual([...(r[1]!.columns!.n as Int32Array)], [1, 2, 3])
        assert.deepEqual(r[2]!.rows, [{ big: '5' }])
        assert.deepEqual(r[3]!.rows, [{ v: 9 }])
      }
    }
  } finally {
    await c.end()
  }
})

test('a composite the client has not met yet: looked up between the description and the Bind, ahead of queries queued behind', async () => {
  const c = await openClient()
  try {
    for (const prepare of [true, false]) {
      const batch = c.batch((b) => b.query(`SELECT $1::${comp} AS v`, [{ a: 1, b: 'x' }], { prepare }))
      const behind = c.query('SELECT $1::text AS q', ['behind'])
      const [r] = await batch
      assert.deepEqual(r!.rows, [{ v: { a: 1, b: 'x' } }])
      assert.deepEqual((await behind).rows, [{ q: 'behind' }])
    }
  } finally {
    await c.end()
  }
})

test('maxRows, timeout and signal: the batch is cancelled and rolled back', async () => {
  const limited = await db
    .batch((b) => {
      b.query(`INSERT INTO ${t} (id, v) VALUES (20, 'x')`)
      b.query('SELECT g FROM generate_series(1, 100000) g', [], { maxRows: 10 })
      // The cancel lands while this runs: had the batch completed first, it would have committed.
      b.query('SELECT pg_sleep(5)')
    })
    .catch((e: unknown) => e)
  assert.ok(limited instanceof ResultLimitError, String(limited))
  assert.match(limited.message, /batch statement 1/)
  const timedOut = await db.batch((b) => void (b.query(`INSERT INTO ${t} (id, v) VALUES (21, 'x')`), b.query('SELECT pg_sleep(5)')), { timeout: 100 }).catch((e: unknown) => e)
  assert.ok(timedOut instanceof TimeoutError, String(timedOut))
  const ac = new AbortController()
  const aborted = db.batch((b) => b.query('SELECT pg_sleep(5)'), { signal: ac.signal })
  setTimeout(() => ac.abort(), 50)
  await assert.rejects(aborted, { name: 'AbortError' })
  assert.equal((await db.query(`SELECT count(*)::int AS n FROM ${t} WHERE id IN (20, 21)`)).rows[0]!.n, 0)
  assert.deepEqual((await db.query('SELECT 1 AS still')).rows, [{ still: 1 }])
})

test('a batch whose connection is lost while it runs rejects with a ConnectionError saying it may have run', async () => {
  const c = await openClient()
  try {
    const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0]!.pid as number
    const running = c.batch((b) => void (b.query('SELECT 1'), b.query('SELECT pg_sleep(5)'))).catch((e: unknown) => e)
    await new Promise((r) => setTimeout(r, 100))
    await adminQuery(`SELECT pg_terminate_backend(${pid})`)
    const err = await running
    assert.ok(err instanceof ConnectionError, String(err))
    assert.equal(err.mayHaveRun, true)
  } finally {
    await c.end().catch(() => undefined)
  }
})

test('a batch queued behind a query a FATAL interrupted never started: it runs again on a new connection, preparing its statements there', async () => {
  const c = await openClient()
  try {
    const pid = c.processId
    const text = `SELECT $1::int AS n, pg_backend_pid() AS pid`
    // Prepared on the first connection, so the batch binds by name there and must prepare again on the next.
    await c.query(text, [0])
    const slept = c.query('SELECT pg_sleep(5)').catch((e: unknown) => e)
    const batch = c.batch((b) => {
      b.query(text, [1])
      b.query(`INSERT INTO ${t} (id, v) VALUES (30, 'once')`)
      b.query(text, [2])
    })
    await new Promise((r) => setTimeout(r, 100))
    await adminQuery(`SELECT pg_terminate_backend(${pid})`)
    assert.ok((await slept) instanceof ConnectionError)
    const r = await batch
    assert.deepEqual(r.map((x) => x.rows[0]?.n), [1, undefined, 2])
    assert.notEqual(r[0]!.rows[0]!.pid, pid)
    assert.equal((await c.query(`SELECT count(*)::int AS n FROM ${t} WHERE id = 30`)).rows[0]!.n, 1)
    await c.query(`DELETE FROM ${t} WHERE id = 30`)
  } finally {
    await c.end()
  }
})

test('a batch is traced as one pipegres:query event of kind batch', async () => {
  const ch = dc.tracingChannel<unknown, QueryTrace>('pipegres:query')
  const seen: QueryTrace[] = []
  const handlers = { start() {}, end() {}, asyncStart() {}, error() {}, asyncEnd: (ctx: QueryTrace) => void seen.push(ctx) }
  const withValues = await openClient({ traceParameters: true })
  ch.subscribe(handlers)
  try {
    await db.batch((b) => {
      b.query('SELECT 1 AS a')
      b.query('SELECT 2 AS b UNION ALL SELECT 3')
    })
    await withValues.batch((b) => void (b.query('SELECT $1::int AS a', [1]), b.query('SELECT $1::text AS b', ['two'])))
    await withValues.batch((b) => void b.query('SELECT 1 / 0')).catch(() => undefined)
  } finally {
    ch.unsubscribe(handlers)
    await withValues.end()
  }
  const batch = seen.filter((e) => e.kind === 'batch')
  assert.equal(batch.length, 3)
  assert.equal(batch[0]!.query, 'SELECT 1 AS a;\nSELECT 2 AS b UNION ALL SELECT 3')
  assert.equal(batch[0]!.rowCount, 3)
  assert.equal(batch[0]!.values, undefined)
  assert.deepEqual(batch[1]!.values, [[1], ['two']])
  assert.equal(batch[2]!.sqlstate, '22012')
})
