// test-tags: slow
// test-needs: pgpool
// Real pgpool-II (Debian's `pgpool2`) in front of a primary and a streaming
// standby, in its usual mode: streaming replication, connection pooling, load
// balancing on. The primary's load-balance weight is 0, so the statements
// pgpool balances go to the standby once it has checked it.
//   - pgpool before 4.6 cannot read the server's answer to a 3.2 startup
//     (a 3.2 BackendKeyData, or NegotiateProtocolVersion) and fails it:
//     pipegres asks for 3.0 (and passes pgpool's error on when it may not);
//   - pipelined reads (several statement texts, each result checked against
//     its own parameters) with writes among them, which pgpool sends to the
//     primary;
//   - a transaction's reads after its write see it (pgpool keeps them on the
//     primary);
//   - readOnly and target_session_attrs: pgpool is one host that reports the
//     primary's role, and does the routing itself;
//   - failover: the primary stops while writes are in flight; each fails with
//     a ConnectionError or succeeds, none hangs or gets another's result, and
//     once the standby is promoted, reads and writes work again.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { connect, ConnectionError, createPool, PgError, type Client, type Pool } from '../../../src/index.js'
import { findPgpool, startPgpool, type RunningPgpool } from '../../support/servers/pgpool.js'
import { useCluster } from '../../support/servers/test-cluster.js'
import { uniqueName } from '../../support/client.js'

const installed = findPgpool() !== undefined
const required = process.env.PIPEGRES_REQUIRE_PGPOOL === '1'
const skip = !installed && !required ? 'pgpool is not installed (apt-get install pgpool2)' : false

describe('pgpool-II in front of a primary and a standby', { skip }, () => {
  const cluster = useCluster({ name: 'pgpool', standbys: 1 })
  let pgpool: RunningPgpool | undefined
  const closers: (Client | Pool)[] = []
  const table = uniqueName('pgpool')

  function url(params = ''): string {
    return `postgres://postgres@127.0.0.1:${pgpool!.port}/postgres?sslmode=disable&connect_timeout=10${params}`
  }

  async function client(params = ''): Promise<Client> {
    const c = await connect(url(params))
    closers.push(c)
    return c
  }

  /** Bounds every wait: a hang is a failure, not a stuck run. */
  function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms)))]).finally(() =>
      clearTimeout(timer),
    )
  }

  before(async () => {
    if (skip) return
    const c = cluster()
    await c.query(c.primary, `CREATE TABLE ${table} (n int NOT NULL, tag text NOT NULL)`)
    pgpool = await startPgpool(c.nodes, { settings: { backend_weight0: '0' } })
  })

  after(async () => {
    await Promise.allSettled(closers.map((c) => c.end()))
    await pgpool?.stop()
  })

  test('a 3.2 startup: pgpool cannot read the answer (a longer cancel key, or a negotiation), pipegres asks for 3.0', async () => {
    const db = await client()
    assert.equal(db.protocolVersion, '3.0')
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    // Where 3.0 is forbidden, the error names the pooler's complaint.
    const err = await connect(url('&min_protocol_version=3.2')).then(
      (c) => (closers.push(c), null),
      (e: unknown) => e,
    )
    assert.ok(err instanceof PgError, String(err))
    // PostgreSQL 18 answers 3.2 with a longer BackendKeyData, older servers negotiate ('v'): pgpool reads neither.
    assert.match(`${err.message} ${err.detail ?? ''}`, /BackendKeyData|kind 'v'/)
  })

  test('pipelined reads and writes through pgpool: every result is its own, every insert runs once', async (t) => {
    const c = cluster()
    const db = await client()
    const ports = new Set<number>()
    for (let round = 0; round < 3; round++) {
      const pending: Promise<void>[] = []
      for (let i = 0; i < 600; i++) {
        const n = round * 1000 + i
        const tag = `r${round}:${i}`
        if (i % 3 === 0) {
          pending.push(
            db.query<{ n: number; tag: string; port: number }>('SELECT $1::int AS n, $2::text AS tag, inet_server_port() AS port', [n, tag]).then((r) => {
              assert.equal(r.rows[0]!.n, n)
              assert.equal(r.rows[0]!.tag, tag)
              ports.add(r.rows[0]!.port)
            }),
          )
        } else if (i % 3 === 1) {
          pending.push(db.query<{ m: number }>('SELECT $1::int * 2 AS m', [n]).then((r) => assert.deepEqual(r.rows, [{ m: n * 2 }])))
        } else {
          pending.push(
            db.query<{ n: number; tag: string }>(`INSERT INTO ${table} VALUES ($1, $2) RETURNING n, tag`, [n, tag]).then((r) => assert.deepEqual(r.rows, [{ n, tag }])),
          )
        }
      }
      await within(Promise.all(pending), 60_000, `round ${round}`)
    }
    // Which node serves a session's reads is pgpool's choice (it may keep them on the primary until it has checked the standby).
    for (const port of ports) assert.ok(c.nodes.some((n) => n.port === port), `a read answered from port ${port}`)
    t.diagnostic(`reads answered by ${[...ports].map((p) => (p === c.primary.port ? 'the primary' : 'the standby')).join(' and ')}`)
    const { rows } = await db.query<{ c: number }>(`SELECT count(*)::int AS c FROM ${table} WHERE tag LIKE 'r%'`, [], {})
    // Read from the standby: wait for replication to catch up rather than assume it has.
    let count = rows[0]!.c
    for (let i = 0; i < 100 && count !== 600; i++) {
      await new Promise((r) => setTimeout(r, 100))
      count = (await db.query<{ c: number }>(`SELECT count(*)::int AS c FROM ${table} WHERE tag LIKE 'r%'`)).rows[0]!.c
    }
    assert.equal(count, 600, 'each insert ran once')
  })

  test('a transaction reads its own writes (pgpool keeps it on the primary)', async () => {
    const c = cluster()
    const db = await client()
    for (let round = 0; round < 20; round++) {
      const tag = `tx${round}`
      const seen = await db.begin(async (tx) => {
        await tx.query(`INSERT INTO ${table} VALUES ($1, $2)`, [round, tag])
        const [a, b] = await Promise.all([
          tx.query<{ c: number; port: number }>(`SELECT count(*)::int AS c, inet_server_port() AS port FROM ${table} WHERE tag = $1`, [tag]),
          tx.query<{ n: number }>('SELECT $1::int AS n', [round]),
        ])
        assert.deepEqual(b.rows, [{ n: round }])
        return a.rows[0]!
      })
      assert.deepEqual(seen, { c: 1, port: c.primary.port })
    }
  })

  test('readOnly and target_session_attrs: one host with the primary role; pgpool routes', async () => {
    const c = cluster()
    const pool = createPool({ connectionString: url('&target_session_attrs=read-write'), max: 3 })
    closers.push(pool)
    const reads = await within(
      Promise.all(Array.from({ length: 50 }, (_, i) => pool.query<{ n: number; port: number }>('SELECT $1::int AS n, inet_server_port() AS port', [i], { readOnly: true }))),
      30_000,
      'readOnly reads',
    )
    // Which node serves each is pgpool's choice (per session, by weight and its own rules).
    const ports = c.nodes.map((n) => n.port)
    reads.forEach((r, i) => {
      assert.equal(r.rows[0]!.n, i)
      assert.ok(ports.includes(r.rows[0]!.port))
    })
    await pool.discover()
    assert.deepEqual(
      pool.hosts.map((h) => h.role),
      ['primary'],
    )
    const write = await pool.query<{ port: number }>(`INSERT INTO ${table} VALUES (0, 'rw') RETURNING inet_server_port() AS port`)
    assert.deepEqual(write.rows, [{ port: c.primary.port }])
  })

  test("failover: writes in flight fail with a ConnectionError (or pgpool's error) or succeed; after the promotion everything works", { timeout: 180_000 }, async () => {
    const c = cluster()
    const pool = createPool({ connectionString: url(), max: 4, connectTimeout: 5000 })
    closers.push(pool)
    await pool.query('SELECT 1')
    const standby = c.standbys[0]!
    const writes = Array.from({ length: 200 }, (_, i) =>
      pool.query<{ n: number; tag: string }>(`INSERT INTO ${table} VALUES ($1, $2) RETURNING n, tag`, [i, `fo${i}`]).then(
        (r) => {
          assert.deepEqual(r.rows, [{ n: i, tag: `fo${i}` }])
          return 'ok'
        },
        (e: unknown) => {
          // pgpool may also answer with an error of its own while it detaches the node.
          assert.ok(e instanceof ConnectionError || e instanceof PgError, String(e))
          return e.code
        },
      ),
    )
    await new Promise((r) => setTimeout(r, Math.random() * 20))
    await c.stopNode(c.primary, 'immediate')
    const outcomes = await within(Promise.all(writes), 60_000, 'the writes in flight')
    const failed = outcomes.filter((o) => o !== 'ok').length
    await c.promote(standby)
    // pgpool finds the new primary by itself (search_primary_node_timeout); each wait is bounded.
    const deadline = performance.now() + 60_000
    let last: unknown
    for (;;) {
      try {
        const r = await pool.query<{ port: number; standby: boolean }>(`INSERT INTO ${table} VALUES (-1, 'after') RETURNING inet_server_port() AS port, pg_is_in_recovery() AS standby`)
        assert.deepEqual(r.rows, [{ port: standby.port, standby: false }])
        break
      } catch (e) {
        last = e
        assert.ok(e instanceof ConnectionError || e instanceof PgError, String(e))
        if (performance.now() > deadline) throw new Error(`no write through pgpool within 60 s of the promotion: ${String(last)}`)
        await new Promise((r) => setTimeout(r, 250))
      }
    }
    const read = await pool.query<{ n: number }>('SELECT $1::int AS n', [7])
    assert.deepEqual(read.rows, [{ n: 7 }])
    console.log(`# failover through pgpool: ${failed} of ${writes.length} writes in flight failed`)
  })
})
