// test-needs: pgbouncer-1.24
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError, ConfigError, connect, createPool, type Client, type ClientOptions, type Pool } from '../../../src/index.js'
import { findPgBouncer124, PGBOUNCER_124_SCRIPT, startPgBouncer, type RunningPgBouncer } from '../../support/servers/pgbouncer.js'
import { adminQuery, getTestServer } from '../../support/servers/test-server.js'
import { uniqueName } from '../../support/client.js'

// PgBouncer 1.24 (built by scripts/build-pgbouncer.sh) in transaction mode with
// max_prepared_statements: it keeps each client's protocol-level named
// statements and prepares them on whichever server connection runs them.
// prepare: 'always' uses that; the default (prepare: true) keeps unnamed
// statements behind any pooler it recognises. PgBouncer's own counters (SHOW
// STATS on its admin console) tell how many Parse messages clients sent.

const required = process.env.PIPEGRES_REQUIRE_PGBOUNCER === '1'
const binary = findPgBouncer124()
const skip = binary === undefined && !required ? `PgBouncer 1.24 is not built (run ${PGBOUNCER_124_SCRIPT})` : false

const bouncers: RunningPgBouncer[] = []
const clients: (Client | Pool)[] = []
let table = ''

before(async () => {
  table = uniqueName('bouncer124')
  await adminQuery(`CREATE TABLE ${table} (id int PRIMARY KEY, actor text NOT NULL, n int NOT NULL)`)
})

after(async () => {
  await Promise.allSettled(clients.map((c) => c.end()))
  await Promise.allSettled(bouncers.map((b) => b.stop()))
  if (table) await adminQuery(`DROP TABLE IF EXISTS ${table}`)
})

interface Through {
  url: string
  admin: string
  /** Parse and Bind messages of named statements so far: from clients, and Parse messages PgBouncer sent to servers (unnamed ones are not counted). */
  counts(): Promise<{ clientParses: number; serverParses: number; binds: number }>
}

async function bouncer(settings: Record<string, string> = {}): Promise<Through> {
  if (binary === undefined) throw new Error(`PgBouncer 1.24 is not built: run ${PGBOUNCER_124_SCRIPT} (or set PIPEGRES_PGBOUNCER_124)`)
  const server = await getTestServer()
  const b = await startPgBouncer(server, { poolMode: 'transaction', poolSize: 2, binary, settings: { max_prepared_statements: '100', ...settings } })
  bouncers.push(b)
  const base = `postgres://${server.superuser.user}@127.0.0.1:${b.port}`
  const admin = `${base}/pgbouncer?sslmode=disable`
  return {
    url: `${base}/postgres?sslmode=disable`,
    admin,
    async counts() {
      const c = await connect(admin)
      try {
        const [stats] = await c.simpleQuery<Record<string, string>>('SHOW STATS')
        // No row before the first client of the database.
        const row = stats!.rows.find((r) => r.database === 'postgres') ?? {}
        return { clientParses: Number(row.total_client_parse_count ?? 0), serverParses: Number(row.total_server_parse_count ?? 0), binds: Number(row.total_bind_count ?? 0) }
      } finally {
        await c.end()
      }
    },
  }
}

async function client(url: string, extra: ClientOptions = {}): Promise<Client> {
  const c = await connect({ connectionString: url, ...extra })
  clients.push(c)
  return c
}

/** Pipelined queries of three texts in rounds of 100, each result checked against its own parameters. */
async function load(db: Pick<Client, 'query'>, who: string, rounds: number): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    const pending: Promise<void>[] = []
    for (let i = 0; i < 100; i++) {
      const n = r * 100 + i
      const tag = `${who}:${n}`
      if (n % 3 === 0) pending.push(db.query<{ n: number; tag: string }>('SELECT $1::int AS n, $2::text AS tag', [n, tag]).then((res) => assert.deepEqual(res.rows, [{ n, tag }])))
      else if (n % 3 === 1) pending.push(db.query<{ at: Date }>("SELECT timestamptz '2026-01-01 00:00:00+00' + $1::int * interval '1 second' AS at", [n]).then((res) => assert.equal(res.rows[0]!.at.getTime(), Date.UTC(2026, 0, 1) + n * 1000)))
      else pending.push(db.query<{ id: number; n: number }>(`INSERT INTO ${table} (id, actor, n) VALUES ($1, $2, $3) RETURNING id, n`, [n + 1_000_000 * Number(who.slice(-1)), who, n * 3]).then((res) => assert.deepEqual(res.rows, [{ id: n + 1_000_000 * Number(who.slice(-1)), n: n * 3 }])))
    }
    await Promise.all(pending)
  }
}

test("prepare: 'always' through PgBouncer 1.24 (transaction mode, max_prepared_statements): one Parse per statement text and client connection, then Bind and Execute only", { skip }, async () => {
  const through = await bouncer()
  const before = await through.counts()
  const actors: [string, Client | Pool][] = [
    ['a1', await client(through.url, { prepare: 'always' })],
    ['a2', await client(`${through.url}&prepare=always`)],
    ['a3', await client(through.url, { prepare: 'always' })],
  ]
  const p = createPool({ connectionString: through.url, prepare: 'always', max: 3 })
  clients.push(p)
  actors.push(['a4', p])
  await Promise.all(actors.map(([who, db]) => load(db, who, 10)))
  const after = await through.counts()
  const parses = after.clientParses - before.clientParses
  const binds = after.binds - before.binds
  // 4,000 queries over at most 6 client connections: 3 texts each, and a type lookup or two.
  assert.ok(parses <= 6 * 5, `${parses} Parse messages from clients for 4,000 queries`)
  assert.ok(binds >= 4000, `${binds} Binds`)
  // PgBouncer prepared them on its 2 server connections once each.
  assert.ok(after.serverParses - before.serverParses <= 2 * 5, `${after.serverParses - before.serverParses} Parse messages to the servers`)
  // The statements live on the server connections under PgBouncer's names.
  const c = actors[0]![1] as Client
  const names = await c.query<{ name: string }>('SELECT name FROM pg_prepared_statements')
  assert.ok(names.rows.length > 0 && names.rows.every((r) => r.name.startsWith('PGBOUNCER_')), JSON.stringify(names.rows))
})

test("prepare: 'always' inside transactions, on whichever server connection they land: statements prepared before them are bound there as they are", { skip }, async () => {
  const through = await bouncer()
  const a = await client(through.url, { prepare: 'always' })
  const b = await client(through.url, { prepare: 'always' })
  await load(a, 'x5', 1)
  const before = await through.counts()
  await Promise.all(
    [a, b].map((db, k) =>
      db.begin(async (tx) => {
        const pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
        for (let i = 0; i < 20; i++) {
          const r = await tx.query<{ n: number; tag: string }>('SELECT $1::int AS n, $2::text AS tag', [i, `tx${k}`])
          assert.deepEqual(r.rows, [{ n: i, tag: `tx${k}` }])
        }
        assert.equal((await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid, pid, 'one server connection for the transaction')
      }),
    ),
  )
  const after = await through.counts()
  // a prepared its texts before; b prepares each once. Nothing is prepared again inside the transactions.
  const parses = after.clientParses - before.clientParses
  assert.ok(parses >= 1 && parses <= 3, `${parses} Parse messages`)
  assert.ok(after.binds - before.binds >= 44, `${after.binds - before.binds} Binds`)
})

test('the default (prepare: true) through PgBouncer 1.24: unnamed statements, as behind any pooler pipegres recognises', { skip }, async () => {
  const through = await bouncer()
  const c = await client(through.url)
  const before = await through.counts()
  await load(c, 'd6', 3)
  const after = await through.counts()
  assert.deepEqual(after, before, 'no named statement parsed or bound')
  assert.deepEqual((await c.query('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows, [{ n: 0 }])
  // Per query, prepare is true or false: 'always' is the connection's setting.
  await assert.rejects(
    async () => c.query('SELECT 1', [], { prepare: 'always' as unknown as boolean }),
    (e) => e instanceof ArgumentError && e.message.includes("'always' is a setting of the client or pool"),
  )
})

test("prepare: 'always' through a PgBouncer that keeps no statements (max_prepared_statements = 0): a lost statement is sent again, then the connection uses unnamed statements", { skip }, async () => {
  const through = await bouncer({ max_prepared_statements: '0' })
  const actors = [await client(through.url, { prepare: 'always' }), await client(through.url, { prepare: 'always' }), await client(through.url, { prepare: 'always' })]
  await Promise.all(actors.map((db, k) => load(db, `z${7 + k}`, 3)))
})

test("prepare takes true, false or 'always'; anything else names the setting", () => {
  assert.throws(() => createPool({ connectionString: 'postgres://u@h/d?prepare=sometimes' }), (e) => e instanceof ConfigError && /prepare/.test(e.message) && /always/.test(e.message))
  assert.throws(() => createPool({ connectionString: 'postgres://u@h/d', prepare: 'never' as unknown as boolean }), (e) => e instanceof ConfigError && /prepare/.test(e.message) && /'always'/.test(e.message))
})
