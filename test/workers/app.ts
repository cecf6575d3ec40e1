// A Cloudflare Worker that uses pipegres against the test server: bundled by
// esbuild and run in workerd by test/integration/workers.test.ts. Each request
// names a scenario in its path and brings the connection settings as JSON;
// the answer is JSON: what the scenario saw, or the error it ended with.
// It imports the Workers entry (src/workerd.ts), as the package's `workerd`
// export condition does for an application.

import { AbortError, ConfigError, PgError, PipegresError, TimeoutError, connect, createPool, type Client, type ClientOptions } from '../../src/workerd.js'
import { cloudflareStream } from '../../src/cloudflare.js'

/** What workerd passes a fetch handler beside the request (the part used here). */
interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void
}

interface Input {
  url: string
  /** A second connection string (another user, or another host name). */
  other?: string
  options?: ClientOptions
}

type Scenario = (input: Input, ctx: ExecutionContext) => Promise<unknown>

function describeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { name: typeof err, message: String(err) }
  const out: Record<string, unknown> = { name: err.constructor.name, message: err.message }
  if (err instanceof PipegresError || err instanceof PgError) out.code = err.code
  if (err instanceof ConfigError) out.setting = err.setting
  const cause = (err as { cause?: unknown }).cause
  if (cause instanceof PgError) out.causeCode = cause.code
  return out
}

async function withClient<T>(options: ClientOptions, fn: (db: Client) => Promise<T>): Promise<T> {
  const db = await connect(options)
  try {
    return await fn(db)
  } finally {
    await db.end()
  }
}

/** Waits for `promise`, but never longer than `ms`: no scenario hangs the test. */
function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

async function session(db: Client): Promise<{ user: string; ssl: boolean }> {
  const { rows } = await db.query<{ u: string; ssl: boolean }>('SELECT current_user AS u, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl')
  return { user: rows[0]!.u, ssl: rows[0]!.ssl }
}

const scenarios: Record<string, Scenario> = {
  // Plain TCP through cloudflare:sockets, and what the session looks like from the server.
  async plain({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      const { rows } = await db.query<{ two: number; big: bigint; at: Date }>("SELECT 1 + 1 AS two, 9007199254740993::int8 AS big, '2024-02-29T12:00:00Z'::timestamptz AS at")
      const r = rows[0]!
      return { tls: db.tls, two: r.two, big: String(r.big), at: r.at.toISOString(), session: await session(db) }
    })
  },

  // 200 queries written at once on one connection, each answered with its own row.
  async pipeline({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      const all = await Promise.all(Array.from({ length: 200 }, (_, i) => db.query<{ n: number }>('SELECT $1::int AS n', [i])))
      // A large result in both directions too: a parameter and a reply of a few MiB cross the streams' backpressure.
      const big = 'x'.repeat(4 * 1024 * 1024)
      const echo = await db.query<{ len: number }>('SELECT length($1::text) AS len, repeat($1::text, 1) AS s', [big])
      return { answered: all.filter((r, i) => r.rows[0]?.n === i).length, bigLength: echo.rows[0]!.len }
    })
  },

  // A server error fails its own query only; the pipelined neighbours and the connection go on.
  async error({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      const [before, failed, after] = await Promise.allSettled([db.query('SELECT 1 AS a'), db.query('SELECT 1 / 0'), db.query('SELECT 3 AS c')])
      return {
        before: before.status === 'fulfilled' ? before.value.rows[0] : describeError(before.reason),
        error: failed.status === 'rejected' ? describeError(failed.reason) : 'no error',
        after: after.status === 'fulfilled' ? after.value.rows[0] : describeError(after.reason),
      }
    })
  },

  // A commit, and a rollback when the function throws.
  async transaction({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      await db.query('CREATE TEMP TABLE t (n int)')
      await db.begin(async (tx) => {
        await tx.query('INSERT INTO t VALUES (1), (2)')
      })
      const rolledBack = await db
        .begin(async (tx) => {
          await tx.query('INSERT INTO t VALUES (3)')
          throw new Error('roll back')
        })
        .then(
          () => false,
          (err: unknown) => err instanceof Error && err.message === 'roll back',
        )
      const { rows } = await db.query<{ n: number }>('SELECT n FROM t ORDER BY n')
      return { rows: rows.map((r) => r.n), rolledBack }
    })
  },

  // COPY FROM STDIN (rows and raw text) and COPY TO STDOUT (raw and decoded rows).
  async copy({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      await db.query('CREATE TEMP TABLE c (id int, name text)')
      const inRows = await db.copyFromRows('c', [[1, 'one'], [2, 'two']], { columns: ['id', 'name'] })
      const raw = db.copyFrom('COPY c FROM STDIN')
      raw.end('3\tthree\n')
      const rawIn = await raw.result
      const text: string[] = []
      for await (const chunk of db.copyTo('COPY (SELECT * FROM c ORDER BY id) TO STDOUT')) text.push(new TextDecoder().decode(chunk as Uint8Array))
      const rows: unknown[] = []
      for await (const row of db.copyToRows('SELECT id, name FROM c ORDER BY id', { rowMode: 'array' })) rows.push(row)
      return { copiedIn: [inRows.rowCount, rawIn.rowCount], text: text.join(''), rows }
    })
  },

  // LISTEN and NOTIFY on the one connection.
  async listen({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      const heard = new Promise<string>((resolve) => {
        void db.listen('workers_test', (payload) => resolve(payload))
      })
      await db.query('SELECT 1')
      await db.notify('workers_test', 'hello from a Worker')
      return { payload: await bounded(heard, 5000, 'the notification') }
    })
  },

  // A query cancelled by its signal and by its timeout: each a CancelRequest on a second socket.
  async cancel({ url }) {
    return withClient({ connectionString: url }, async (db) => {
      const ac = new AbortController()
      const t0 = Date.now()
      const sleeping = db.query('SELECT pg_sleep(30)', [], { signal: ac.signal })
      setTimeout(() => ac.abort(), 100)
      const aborted = await bounded(sleeping, 10_000, 'the aborted query').then(
        () => 'completed',
        (e: unknown) => (e instanceof AbortError ? describeError(e) : describeError(e)),
      )
      const timedOut = await bounded(db.query('SELECT pg_sleep(30)', [], { timeout: 100 }), 10_000, 'the query with a timeout').then(
        () => 'completed',
        (e: unknown) => ({ ...describeError(e), isTimeout: e instanceof TimeoutError }),
      )
      const after = (await db.query<{ ok: number }>('SELECT 1 AS ok')).rows[0]
      return { aborted, timedOut, after, ms: Date.now() - t0 }
    })
  },

  // Who the server says we are, and whether the session is encrypted (SCRAM users, sslmodes, verify-full).
  async session({ url, options }) {
    return withClient({ connectionString: url, ...options }, async (db) => ({ tls: db.tls, session: await session(db) }))
  },

  // A connection that must fail: the error's class, code and setting.
  async refused({ url, options }) {
    return connect({ connectionString: url, ...options }).then(
      async (db) => {
        await db.end()
        return { connected: true }
      },
      (err: unknown) => ({ connected: false, error: describeError(err) }),
    )
  },

  // The pattern Cloudflare recommends: a pool per request, ended after the response by ctx.waitUntil.
  async pool({ url }, ctx) {
    const pool = createPool({ connectionString: url, max: 3, applicationName: 'pipegres_workers_pool' })
    try {
      const pids = await Promise.all(Array.from({ length: 12 }, () => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.02)')))
      const level = await pool.begin(async (tx) => (await tx.query<{ s: string }>('SELECT current_setting($1) AS s', ['transaction_isolation'])).rows[0]!.s)
      return { connections: new Set(pids.map((r) => r.rows[0]!.pid)).size, level }
    } finally {
      ctx.waitUntil(pool.end())
    }
  },

  // The Cloudflare transport given by name through the stream option, over TLS.
  async explicit({ url }) {
    return withClient({ connectionString: url, stream: cloudflareStream }, async (db) => ({ tls: db.tls, session: await session(db) }))
  },
}

export default {
  async fetch(request: Request, _env: unknown, ctx: ExecutionContext): Promise<Response> {
    const name = new URL(request.url).pathname.slice(1)
    const scenario = scenarios[name]
    if (scenario === undefined) return Response.json({ error: { name: 'NotFound', message: `no scenario ${name}` } }, { status: 404 })
    try {
      const input = (await request.json()) as Input
      return Response.json({ result: await scenario(input, ctx) })
    } catch (err) {
      return Response.json({ error: describeError(err) })
    }
  },
}
