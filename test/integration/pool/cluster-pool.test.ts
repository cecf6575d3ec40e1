// A pool on a real primary with two streaming standbys: roles discovered,
// reads spread over the standbys, writes on the primary, lagging standbys
// skipped, reads that wait for their own writes, a cluster with no primary.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConnectionError, createPool, type HostChange, type HostInfo, type Pool, type PoolOptions } from '../../../src/index.js'
import { Lsn } from '../../../src/types/lsn.js'
import { until } from '../../support/fault-checks.js'
import { useCluster, type ClusterNode } from '../../support/servers/test-cluster.js'

const cluster = useCluster({ name: 'routing' })

const where = 'SELECT inet_server_port() AS port, pg_is_in_recovery() AS standby'

async function withPool(url: string, options: PoolOptions, fn: (pool: Pool) => Promise<void>): Promise<void> {
  const pool = createPool({ connectionString: url, ...options })
  try {
    await fn(pool)
  } finally {
    await pool.end()
  }
}

const portOf = (n: ClusterNode): number => n.port
const addressOf = (n: ClusterNode): string => `127.0.0.1:${n.port}`

test('roles are discovered; reads spread over both standbys, writes and transactions go to the primary', async () => {
  const c = cluster()
  const events: [HostInfo, HostChange][] = []
  await withPool(c.url(undefined, { target_session_attrs: 'read-write' }), { max: 6 }, async (pool) => {
    pool.on('host', (info, change) => events.push([info, change]))
    const write = await pool.query<{ port: number; standby: boolean }>(where)
    assert.deepEqual(write.rows[0], { port: c.primary.port, standby: false })
    const described = await pool.discover()
    assert.equal(described.length, 3)
    const roles = Object.fromEntries(pool.hosts.map((h) => [h.address, h.role]))
    assert.deepEqual(roles, Object.fromEntries(c.nodes.map((n) => [addressOf(n), n === c.primary ? 'primary' : 'standby'])))
    assert.deepEqual(events.filter(([, ch]) => ch === 'role').map(([h]) => h.address).sort(), c.nodes.map(addressOf).sort())

    const reads = await Promise.all(Array.from({ length: 300 }, () => pool.query<{ port: number; standby: boolean }>(where, [], { readOnly: true })))
    assert.ok(reads.every((r) => r.rows[0]!.standby), 'a read landed on the primary')
    const used = new Set(reads.map((r) => r.rows[0]!.port))
    assert.deepEqual([...used].sort(), c.standbys.map(portOf).sort(), 'reads use both standbys')

    const writes = await Promise.all(Array.from({ length: 50 }, () => pool.query<{ standby: boolean }>(where)))
    assert.ok(writes.every((r) => !r.rows[0]!.standby))

    const ro = await pool.begin({ readOnly: true }, (tx) => tx.query<{ standby: boolean; ro: string }>(`${where}, current_setting('transaction_read_only') AS ro`))
    assert.equal(ro.rows[0]!.standby, true)
    assert.equal(ro.rows[0]!.ro, 'on')
    const rw = await pool.begin((tx) => tx.query<{ standby: boolean }>(where))
    assert.equal(rw.rows[0]!.standby, false)
    const reserved = await pool.reserve({ readOnly: true })
    try {
      assert.equal((await reserved.query<{ standby: boolean }>(where)).rows[0]!.standby, true)
    } finally {
      await reserved.release()
    }
    const streamed = []
    for await (const row of pool.stream<{ standby: boolean }>(where, [], { readOnly: true })) streamed.push(row.standby)
    assert.deepEqual(streamed, [true])
    assert.ok(pool.totalCount <= 6)
  })
})

test('a pool that reads by default: queries go to standbys unless they say readOnly: false', async () => {
  const c = cluster()
  await withPool(c.url(undefined, { target_session_attrs: 'primary' }), { readOnly: true }, async (pool) => {
    // Until a standby's role is known, reads go to the primary (see the next test): on a
    // loaded machine the first query can come before the standbys have answered.
    await pool.query('SELECT 1')
    await until('a standby is known', () => pool.hosts.some((h) => h.role === 'standby' && h.lsn !== null && !h.lagging))
    assert.equal((await pool.query<{ standby: boolean }>(where)).rows[0]!.standby, true)
    assert.equal((await pool.query<{ standby: boolean }>(where, [], { readOnly: false })).rows[0]!.standby, false)
    const lsn = await pool.writeLsn()
    assert.match(String(lsn), /^[0-9A-F]+\/[0-9A-F]+$/)
  })
})

test('with no standby usable, reads go to the primary; an unreachable host is reported down', async () => {
  const c = cluster()
  // A port nothing listens on: the harness's nodes use others.
  const dead = '127.0.0.1:1'
  const url = c.url([c.primary], { target_session_attrs: 'read-write' }).replace(`127.0.0.1:${c.primary.port}`, `127.0.0.1:${c.primary.port},${dead}`)
  const events: [string, HostChange][] = []
  await withPool(url, {}, async (pool) => {
    pool.on('host', (info, change) => events.push([info.address, change]))
    const r = await pool.query<{ standby: boolean }>(where, [], { readOnly: true })
    assert.equal(r.rows[0]!.standby, false)
    await until('the dead host is reported down', () => pool.hosts.some((h) => h.address === dead && h.down))
    const h = pool.hosts.find((x) => x.address === dead)!
    assert.equal(h.role, 'unknown')
    assert.match(h.lastError ?? '', /127\.0\.0\.1:1/)
    assert.ok(events.some(([a, ch]) => a === dead && ch === 'down'))
  })
})

test('a standby whose replay lags past maxReplicationLag gets no reads until it catches up', async () => {
  const c = cluster()
  const [lagging, other] = c.standbys as [ClusterNode, ClusterNode]
  const changes: [string, HostChange][] = []
  await withPool(c.url(undefined, { target_session_attrs: 'read-write' }), { maxReplicationLag: { bytes: 100_000 }, hostCheckInterval: 50, max: 6 }, async (pool) => {
    pool.on('host', (info, change) => changes.push([info.address, change]))
    await pool.query('CREATE TABLE IF NOT EXISTS lag_probe (v int)')
    await c.query(lagging, 'SELECT pg_wal_replay_pause()')
    try {
      await pool.query('INSERT INTO lag_probe SELECT generate_series(1, 20000)')
      await until('the paused standby is seen lagging', () => pool.hosts.find((h) => h.address === addressOf(lagging))!.lagging)
      const info = pool.hosts.find((h) => h.address === addressOf(lagging))!
      assert.ok(info.lagBytes !== null && info.lagBytes > 100_000, `lagBytes ${info.lagBytes}`)
      assert.ok(changes.some(([a, ch]) => a === addressOf(lagging) && ch === 'lagging'))
      // The other standby lags for a moment too after so much WAL, and the pool may not have seen it yet:
      // wait until the pool has seen it replay past the insert, so its reads are not sent to the primary.
      const inserted = Lsn.from(String((await c.query(c.primary, 'SELECT pg_current_wal_insert_lsn()')).rows[0]![0])).value
      await until('the pool sees the other standby past the insert', () => {
        const h = pool.hosts.find((x) => x.address === addressOf(other))!
        return !h.lagging && h.lsn !== null && Lsn.from(h.lsn).value >= inserted
      })
      const reads = await Promise.all(Array.from({ length: 100 }, () => pool.query<{ port: number }>(where, [], { readOnly: true })))
      const ports = reads.map((r) => r.rows[0]!.port)
      const seen = `reads by port: ${JSON.stringify(Object.fromEntries(c.nodes.map((n) => [n.port, ports.filter((p) => p === n.port).length])))}`
      assert.ok(!ports.includes(lagging.port), `a read went to the lagging standby; ${seen}`)
      // Background WAL (autovacuum of the new rows) may make the other standby lag a moment: those reads go to the primary.
      assert.ok(ports.includes(other.port), `no read went to the standby that is caught up; ${seen}`)
    } finally {
      await c.query(lagging, 'SELECT pg_wal_replay_resume()')
    }
    await until('the standby is seen caught up', () => !pool.hosts.find((h) => h.address === addressOf(lagging))!.lagging)
    assert.ok(changes.some(([a, ch]) => a === addressOf(lagging) && ch === 'caught-up'))
    await pool.query('DROP TABLE lag_probe')
  })
})

test('read your own writes: a read with after sees the write, from a standby once one has replayed it', async () => {
  const c = cluster()
  await withPool(c.url(undefined, { target_session_attrs: 'read-write' }), { hostCheckInterval: 50, max: 6 }, async (pool) => {
    await pool.query('CREATE TABLE IF NOT EXISTS ryw (v int)')
    for (let i = 1; i <= 20; i++) {
      await pool.query('INSERT INTO ryw VALUES ($1)', [i])
      const after = await pool.writeLsn()
      const r = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM ryw WHERE v = $1', [i], { readOnly: true, after })
      assert.equal(r.rows[0]!.n, 1, `write ${i} not seen by the read after it`)
    }
    const after = await pool.writeLsn()
    for (const s of c.standbys) await c.waitForReplay(s, String(after))
    await until('a read with after lands on a standby', async () => (await pool.query<{ standby: boolean }>(where, [], { readOnly: true, after })).rows[0]!.standby)
    await assert.rejects(pool.query('SELECT 1', [], { readOnly: true, after: 'nope' }), /after must be|not an LSN/)
    await pool.query('DROP TABLE ryw')
  })
})

test('reads that only a standby may serve wait for one that has replayed their LSN, and fail after failoverTimeout', async () => {
  const c = cluster()
  const url = c.url(undefined, { target_session_attrs: 'standby' })
  await withPool(c.url(undefined, { target_session_attrs: 'read-write' }), {}, async (writer) => {
    await writer.query('CREATE TABLE IF NOT EXISTS waits (v int)')
    await withPool(url, { hostCheckInterval: 50, failoverTimeout: 1500 }, async (pool) => {
      await pool.query('SELECT 1')
      for (const s of c.standbys) await c.query(s, 'SELECT pg_wal_replay_pause()')
      try {
        await writer.query('INSERT INTO waits VALUES (1)')
        const after = await writer.writeLsn()
        const t0 = performance.now()
        const err = await pool.query('SELECT count(*) FROM waits', [], { readOnly: true, after }).catch((e: unknown) => e)
        assert.ok(err instanceof ConnectionError, String(err))
        assert.equal(err.mayHaveRun, false)
        assert.match(err.message, /no usable host.*replayed the requested LSN/)
        assert.ok(performance.now() - t0 >= 1400)
        const pending = pool.query<{ n: number }>('SELECT count(*)::int AS n FROM waits', [], { readOnly: true, after })
        await new Promise((r) => setTimeout(r, 200))
        for (const s of c.standbys) await c.query(s, 'SELECT pg_wal_replay_resume()')
        assert.equal((await pending).rows[0]!.n, 1)
      } finally {
        for (const s of c.standbys) await c.query(s, 'SELECT pg_wal_replay_resume()')
      }
    })
    await writer.query('DROP TABLE waits')
  })
})

test('a cluster without a primary: writes fail after failoverTimeout naming every host, reads still work', async () => {
  const c = cluster()
  await withPool(c.url(c.standbys, { target_session_attrs: 'read-write' }), { failoverTimeout: 800 }, async (pool) => {
    const t0 = performance.now()
    const err = await pool.query('SELECT 1').catch((e: unknown) => e)
    const ms = performance.now() - t0
    assert.ok(err instanceof ConnectionError, String(err))
    assert.equal(err.code, 'PG_CONNECTION_REFUSED')
    for (const s of c.standbys) assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${s.port} standby`))
    assert.ok(ms >= 700 && ms < 10_000, `failed after ${ms} ms`)
    assert.equal((await pool.query<{ standby: boolean }>(where, [], { readOnly: true })).rows[0]!.standby, true)
  })
})

test('routing options are checked', async () => {
  const c = cluster()
  assert.throws(() => createPool({ connectionString: c.url(), maxReplicationLag: -1 }), /maxReplicationLag must be/)
  assert.throws(() => createPool({ connectionString: c.url(), maxReplicationLag: { seconds: 1 } as never }), /unknown maxReplicationLag key "seconds"/)
  assert.throws(() => createPool({ connectionString: c.url(), readOnly: 'yes' as never }), /readOnly must be true or false/)
  assert.throws(() => createPool({ connectionString: c.url(), failoverTimeout: -5 }), /failoverTimeout/)
  await withPool(c.url(), {}, async (pool) => {
    await assert.rejects(pool.query('SELECT 1', [], { readOnly: 1 as never }), /readOnly must be true or false/)
    await assert.rejects(pool.reserve({ readonly: true } as never), /unknown reserve\(\) option "readonly"/)
  })
})
