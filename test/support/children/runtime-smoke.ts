// Runs pipegres's main features once and prints one JSON report: run under
// Bun and Deno by test/integration/project/runtimes.test.ts (compiled to
// build/test/support/children/runtime-smoke.js), to show the same code works there.
// The connection options arrive as JSON on stdin, not in the environment:
// under Deno the script runs without --allow-env.

import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { AbortError, connect, createPool, type ClientOptions } from '../../../src/index.js'

async function readOptions(): Promise<ClientOptions> {
  let text = ''
  for await (const chunk of process.stdin) text += typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk as Uint8Array)
  return JSON.parse(text) as ClientOptions
}

async function main(): Promise<Record<string, unknown>> {
  const options = await readOptions()
  const report: Record<string, unknown> = {}
  const db = await connect(options)
  const table = `runtime_smoke_${Math.random().toString(36).slice(2, 10)}`
  try {
    report.tls = db.tls

    // Pipelining: a thousand queries in flight on one connection, each answered with its own row.
    const all = Array.from({ length: 1000 }, (_, i) => db.query<{ n: number }>('SELECT $1::int AS n', [i]))
    const rows = await Promise.all(all)
    report.pipelined = rows.every((r, i) => r.rows[0]?.n === i) ? rows.length : 'mismatch'

    // Types both ways.
    const typed = await db.query<{ big: bigint; at: Date; j: { a: number[] } }>(`SELECT 9007199254740993::int8 AS big, '2024-02-29T12:00:00Z'::timestamptz AS at, '{"a":[1,2]}'::jsonb AS j`)
    const t = typed.rows[0]!
    report.types = t.big === 9007199254740993n && t.at.toISOString() === '2024-02-29T12:00:00.000Z' && t.j.a[1] === 2

    // Streams and cursors.
    let streamed = 0
    for await (const row of db.stream<{ g: number }>('SELECT g FROM generate_series(1, 5000) g', [], { highWaterMark: 100 })) streamed += row.g
    report.stream = streamed
    let batches = 0
    for await (const batch of db.cursor('SELECT generate_series(1, 10)', [], { batchSize: 4 })) batches += batch.length > 0 ? 1 : 0
    report.cursorBatches = batches

    // COPY in both directions.
    await db.query(`CREATE TABLE ${table} (id int, name text)`)
    await pipeline(Readable.from(['1\tone\n', '2\ttwo\n']), db.copyFrom(`COPY ${table} FROM STDIN`))
    await db.copyFromRows(table, [[3, 'three']], { columns: ['id', 'name'] })
    const chunks: string[] = []
    await pipeline(
      db.copyTo(`COPY (SELECT * FROM ${table} ORDER BY id) TO STDOUT`),
      new Writable({
        write(chunk: Uint8Array, _enc, cb) {
          chunks.push(new TextDecoder().decode(chunk))
          cb()
        },
      }),
    )
    report.copy = chunks.join('')

    // LISTEN / NOTIFY.
    const heard = new Promise<string>((resolve) => {
      void db.listen('runtime_smoke', (payload) => resolve(payload))
    })
    await new Promise((r) => setTimeout(r, 20))
    await db.notify('runtime_smoke', 'hello')
    report.notification = await Promise.race([heard, new Promise((r) => setTimeout(() => r('timeout'), 5000))])

    // Cancel: an aborted query is cancelled on the server, and the connection goes on.
    const ac = new AbortController()
    const sleeping = db.query('SELECT pg_sleep(10)', [], { signal: ac.signal })
    setTimeout(() => ac.abort(), 100)
    const t0 = performance.now()
    const aborted = await sleeping.then(
      () => 'completed',
      (e: unknown) => (e instanceof AbortError ? 'AbortError' : String(e)),
    )
    report.cancel = { error: aborted, fast: performance.now() - t0 < 5000, after: (await db.query('SELECT 1 AS ok')).rows[0] }

    // Transactions: a commit, and a rollback when the function throws.
    await db.begin(async (tx) => {
      await tx.query(`INSERT INTO ${table} VALUES (4, 'four')`)
    })
    await db
      .begin(async (tx) => {
        await tx.query(`INSERT INTO ${table} VALUES (5, 'five')`)
        throw new Error('roll back')
      })
      .catch(() => undefined)
    report.transactions = (await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]!.n
  } finally {
    await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined)
    await db.end()
  }

  // Pools: queries spread over connections, and a transaction on one of its own.
  const pool = createPool({ ...options, max: 3 })
  try {
    const pids = await Promise.all(Array.from({ length: 30 }, () => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.01)')))
    report.poolConnections = new Set(pids.map((r) => r.rows[0]!.pid)).size
    report.poolTransaction = await pool.begin(async (tx) => (await tx.query<{ s: string }>('SELECT current_setting($1) AS s', ['transaction_isolation'])).rows[0]!.s)
  } finally {
    await pool.end()
  }
  return report
}

main().then(
  (report) => {
    console.log(JSON.stringify(report))
    process.exit(0)
  },
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err))
    process.exit(1)
  },
)
