// A failover under load, on a real primary with two streaming standbys: the
// primary stops, a standby is promoted, the other follows it, and the old
// primary comes back as a standby. A pool keeps writing throughout: no write
// it acknowledged is lost or applied twice, writes resume on the new primary,
// and the old primary takes reads once it is back.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConnectionError, createPool, type HostChange } from '../../../src/index.js'
import { until } from '../../support/fault-checks.js'
import { useCluster, type ClusterNode } from '../../support/servers/test-cluster.js'

const cluster = useCluster({ name: 'failover' })

interface Outcome {
  id: number
  ok: boolean
  at: number
  /** The server that acknowledged it. */
  port?: number
  error?: string
  mayHaveRun?: boolean | undefined
}

test('the primary stops and a standby is promoted under a pipelined INSERT load: writes move to the new primary, none lost or doubled', async (t) => {
  const c = cluster()
  const [oldPrimary, next, other] = [c.primary, c.standbys[0]!, c.standbys[1]!] as [ClusterNode, ClusterNode, ClusterNode]
  const changes: [string, HostChange, string][] = []
  const pool = createPool({ connectionString: c.url(undefined, { target_session_attrs: 'read-write' }), max: 6, hostCheckInterval: 100, failoverTimeout: 30_000 })
  pool.on('host', (h, change) => changes.push([h.address, change, h.role]))
  try {
    await pool.query('CREATE TABLE ledger (id int NOT NULL)')
    await pool.discover()
    let nextId = 0
    let running = true
    const outcomes: Outcome[] = []
    const worker = async (): Promise<void> => {
      while (running) {
        const batch = Array.from({ length: 8 }, () => nextId++)
        await Promise.all(
          batch.map((id) =>
            pool.query<{ port: number }>('INSERT INTO ledger (id) VALUES ($1) RETURNING inet_server_port() AS port', [id]).then(
              (r) => void outcomes.push({ id, ok: true, at: performance.now(), port: r.rows[0]!.port }),
              (err: unknown) => void outcomes.push({ id, ok: false, at: performance.now(), error: `${(err as Error).name} ${(err as { code?: string }).code}`, mayHaveRun: err instanceof ConnectionError ? err.mayHaveRun : undefined }),
            ),
          ),
        )
      }
    }
    const workers = Array.from({ length: 8 }, () => worker())
    await until('writes under way', () => outcomes.length > 500)

    // The failover: the primary stops (fast: it hands its standbys all its WAL), a standby is promoted, the other follows it.
    const lostAt = performance.now()
    await c.stopNode(oldPrimary, 'fast')
    const stoppedAt = performance.now()
    await c.promote(next)
    const promotedAt = performance.now()
    await c.follow(other, next)
    await until('a write lands on the new primary', () => outcomes.some((o) => o.port === next.port))
    const firstWrite = outcomes.filter((o) => o.port === next.port).reduce((m, o) => Math.min(m, o.at), Infinity)
    await new Promise((r) => setTimeout(r, 500))
    running = false
    await Promise.all(workers)

    const ok = outcomes.filter((o) => o.ok)
    const failed = outcomes.filter((o) => !o.ok)
    const kinds = new Map<string, number>()
    for (const f of failed) {
      const kind = `${f.error} mayHaveRun=${f.mayHaveRun}`
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
    }
    const during = outcomes.filter((o) => o.at >= lostAt && o.at <= promotedAt + 1000)

    t.diagnostic(
      `writes: ${outcomes.length} issued, ${ok.length} acknowledged, ${failed.length} failed (${[...kinds].map(([k, n]) => `${n}x ${k}`).join(', ') || 'none'}); ` +
        `${during.length} settled between the stop and a second after the promotion, ${during.filter((o) => o.ok).length} of them acknowledged; ` +
        `primary stopped in ${(stoppedAt - lostAt).toFixed(0)} ms, promoted ${(promotedAt - stoppedAt).toFixed(0)} ms later; ` +
        `first write acknowledged by the new primary ${(firstWrite - lostAt).toFixed(0)} ms after the primary began to stop, ${(firstWrite - promotedAt).toFixed(0)} ms after pg_promote() returned`,
    )

    // Every acknowledged write is on the new primary once; every write that provably never ran is absent.
    const counts = new Map<number, number>()
    for (const r of (await pool.query<{ id: number; n: number }>('SELECT id, count(*)::int AS n FROM ledger GROUP BY id')).rows) counts.set(r.id, r.n)
    for (const [id, n] of counts) assert.equal(n, 1, `id ${id} was applied ${n} times`)
    for (const o of ok) assert.equal(counts.get(o.id), 1, `acknowledged write ${o.id} is missing`)
    for (const f of failed) if (f.mayHaveRun === false) assert.equal(counts.has(f.id), false, `write ${f.id} reported as never run is in the table`)
    for (const f of failed) assert.ok(f.error!.startsWith('ConnectionError'), `write ${f.id} failed with ${f.error}`)
    // Only writes in flight on the lost primary fail (how many depends on whether its FATAL was read before the reset):
    // none once the new primary is found.
    for (const f of failed) assert.ok(f.at < firstWrite, `write ${f.id} failed ${(f.at - firstWrite).toFixed(0)} ms after the new primary took writes`)
    assert.ok(changes.some(([a, ch, role]) => a === `127.0.0.1:${next.port}` && ch === 'role' && role === 'primary'), 'the promotion was reported')
    // The old primary comes back as a standby of the new one: the pool finds it and sends it reads.
    const rejoinAt = performance.now()
    await c.rejoinAsStandby(oldPrimary, next)
    const rejoinedAt = performance.now()
    await until('the old primary is seen as a standby', () => pool.hosts.some((h) => h.address === `127.0.0.1:${oldPrimary.port}` && h.role === 'standby'))
    await until('a read lands on the old primary', async () => {
      const rs = await Promise.all(Array.from({ length: 40 }, () => pool.query<{ port: number }>('SELECT inet_server_port() AS port', [], { readOnly: true })))
      return rs.some((r) => r.rows[0]!.port === oldPrimary.port)
    })
    t.diagnostic(`old primary rejoined as a standby in ${(rejoinedAt - rejoinAt).toFixed(0)} ms; the pool read from it ${(performance.now() - rejoinedAt).toFixed(0)} ms later`)
    assert.equal((await pool.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0]!.standby, false)
  } finally {
    await pool.end()
  }
})
