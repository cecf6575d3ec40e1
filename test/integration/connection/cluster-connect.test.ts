// test-tags: slow
// Multi-host connection strings against a real primary with two streaming
// standbys: which node each target_session_attrs value lands on for host lists
// in several orders, load_balance_hosts, stopped nodes, and a failover. The
// expectations follow libpq: hosts are tried in order (shuffled once with
// load_balance_hosts=random), and prefer-standby makes a second pass taking any
// server when no standby was found.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { inspect } from 'node:util'
import { connect, ConnectionError, type TargetSessionAttrs } from '../../../src/index.js'
import { closedPort, connectError, isolateEnvironment } from '../../support/connect.js'
import { landing, useCluster, whereIs, type Cluster, type ClusterNode } from '../../support/servers/test-cluster.js'

await isolateEnvironment('cluster')

const cluster = useCluster({ name: 'connect' })

const TARGETS: TargetSessionAttrs[] = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby']

/** libpq's choice for a host list in which every node runs: the first suitable host; prefer-standby falls back to the first host. */
function expectedNode(target: TargetSessionAttrs, hosts: readonly ClusterNode[]): ClusterNode | undefined {
  const standby = hosts.find((n) => n.role === 'standby')
  switch (target) {
    case 'any':
      return hosts[0]
    case 'read-write':
    case 'primary':
      return hosts.find((n) => n.role === 'primary')
    case 'read-only':
    case 'standby':
      return standby
    case 'prefer-standby':
      return standby ?? hosts[0]
  }
}

const hostPort = (n: ClusterNode) => `${n.host}:${n.port}`

/** Names of the nodes `count` connections to `url` land on, with how many each. */
async function spread(c: Cluster, url: string, count: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>()
  for (let i = 0; i < count; i++) {
    const { node } = await landing(c, url)
    seen.set(node.name, (seen.get(node.name) ?? 0) + 1)
  }
  return seen
}

/** A table on the primary that every test may add rows to. */
const TABLE = 'cluster_connect_rows'

describe('replication', () => {
  test('a row inserted on the primary is visible on each standby after waitForReplay', async () => {
    const c = cluster()
    const [primary, ...standbys] = c.nodes
    assert.equal(standbys.length, 2)
    await c.query(primary!, `CREATE TABLE ${TABLE} (id int PRIMARY KEY, note text)`)
    const client = await connect(c.url([primary!]))
    try {
      await client.query(`INSERT INTO ${TABLE} VALUES ($1, $2)`, [1, 'from the primary'])
    } finally {
      await client.end()
    }
    for (const standby of standbys) {
      await c.waitForReplay(standby)
      const reader = await connect(c.url([standby]))
      try {
        assert.deepEqual(await whereIs(c, reader), { node: standby, inRecovery: true })
        const { rows } = await reader.query<{ note: string }>(`SELECT note FROM ${TABLE} WHERE id = 1`)
        assert.deepEqual(rows, [{ note: 'from the primary' }])
      } finally {
        await reader.end()
      }
    }
  })

  test('the primary is out of recovery, the standbys in it, each streaming from the primary', async () => {
    const c = cluster()
    assert.deepEqual((await c.query(c.primary, 'SELECT pg_is_in_recovery()')).rows, [['f']])
    const senders = await c.query(c.primary, `SELECT application_name FROM pg_stat_replication WHERE state = 'streaming' ORDER BY 1`)
    assert.deepEqual(senders.rows, [['standby1'], ['standby2']])
    for (const standby of c.standbys) assert.deepEqual((await c.query(standby, 'SELECT pg_is_in_recovery()')).rows, [['t']])
  })
})

describe('target_session_attrs over host lists in several orders', () => {
  const orders: [string, (c: Cluster) => ClusterNode[]][] = [
    ['primary, standby1, standby2', (c) => [c.node('primary'), c.node('standby1'), c.node('standby2')]],
    ['standby1, primary, standby2', (c) => [c.node('standby1'), c.node('primary'), c.node('standby2')]],
    ['standby2, standby1, primary', (c) => [c.node('standby2'), c.node('standby1'), c.node('primary')]],
    ['primary, standby2', (c) => [c.node('primary'), c.node('standby2')]],
  ]
  for (const target of TARGETS) {
    for (const [label, hostsOf] of orders) {
      test(`${target}: ${label}`, async () => {
        const c = cluster()
        const hosts = hostsOf(c)
        const expected = expectedNode(target, hosts)!
        const { node, inRecovery } = await landing(c, c.url(hosts, { target_session_attrs: target }))
        assert.equal(node.name, expected.name)
        assert.equal(inRecovery, expected.role === 'standby')
      })
    }
  }

  test('only standbys listed: read-write and primary fail naming every host; standby, read-only, prefer-standby take the first', async () => {
    const c = cluster()
    const hosts = [c.node('standby2'), c.node('standby1')]
    for (const target of ['read-write', 'primary'] as const) {
      const err = await connectError(c.url(hosts, { target_session_attrs: target }))
      assert.ok(err instanceof ConnectionError, inspect(err))
      assert.equal(err.code, 'PG_CONNECTION_REFUSED')
      assert.match(err.message, new RegExp(`could not connect to any of 2 hosts`))
      for (const n of hosts) assert.ok(err.message.includes(hostPort(n)), err.message)
      assert.match(err.message, target === 'primary' ? /in hot standby mode/ : /session is read-only/)
    }
    for (const target of ['standby', 'read-only', 'prefer-standby', 'any'] as const) {
      assert.equal((await landing(c, c.url(hosts, { target_session_attrs: target }))).node.name, 'standby2')
    }
  })

  test('only the primary listed: standby fails naming it, prefer-standby falls back to it', async () => {
    const c = cluster()
    const err = await connectError(c.url([c.primary], { target_session_attrs: 'standby' }))
    assert.ok(err instanceof ConnectionError, inspect(err))
    assert.equal(err.code, 'PG_CONNECTION_REFUSED')
    assert.ok(err.message.includes(hostPort(c.primary)), err.message)
    assert.match(err.message, /target_session_attrs=standby: the server is not in hot standby mode/)
    assert.equal((await landing(c, c.url([c.primary], { target_session_attrs: 'prefer-standby' }))).node.name, 'primary')
  })
})

describe('load_balance_hosts', () => {
  // Two standbys chosen at random: the chance that 30 connections all miss one is 2 in a billion.
  const COUNT = 30

  test('random with standby: connections land on both standbys, never on the primary', async () => {
    const c = cluster()
    const seen = await spread(c, c.url(c.nodes, { target_session_attrs: 'standby', load_balance_hosts: 'random' }), COUNT)
    assert.deepEqual([...seen.keys()].sort(), ['standby1', 'standby2'], inspect(seen))
  })

  test('random with prefer-standby: both standbys, never the primary', async () => {
    const c = cluster()
    const seen = await spread(c, c.url(c.nodes, { target_session_attrs: 'prefer-standby', load_balance_hosts: 'random' }), COUNT)
    assert.deepEqual([...seen.keys()].sort(), ['standby1', 'standby2'], inspect(seen))
  })

  test('random with any: every node', async () => {
    const c = cluster()
    const seen = await spread(c, c.url(c.nodes, { load_balance_hosts: 'random' }), COUNT)
    assert.deepEqual([...seen.keys()].sort(), ['primary', 'standby1', 'standby2'], inspect(seen))
  })

  test('disable (the default): every connection lands on the first suitable host', async () => {
    const c = cluster()
    const settings: Record<string, string>[] = [{ target_session_attrs: 'standby', load_balance_hosts: 'disable' }, { target_session_attrs: 'standby' }]
    for (const params of settings) {
      const seen = await spread(c, c.url(c.nodes, params), 10)
      assert.deepEqual([...seen], [['standby1', 10]])
    }
  })
})

describe('stopped nodes', () => {
  test('a stopped standby is skipped (connection refused) and the next host is used; it is used again once started', async () => {
    const c = cluster()
    const [primary, standby1, standby2] = [c.node('primary'), c.node('standby1'), c.node('standby2')]
    await c.stopNode(standby1, 'immediate')
    try {
      const hosts = [standby1, standby2, primary]
      assert.equal((await landing(c, c.url(hosts))).node.name, 'standby2')
      assert.equal((await landing(c, c.url(hosts, { target_session_attrs: 'standby' }))).node.name, 'standby2')
      assert.equal((await landing(c, c.url(hosts, { target_session_attrs: 'read-write' }))).node.name, 'primary')
      const err = await connectError(c.url([standby1, primary], { target_session_attrs: 'standby' }))
      assert.ok(err instanceof ConnectionError, inspect(err))
      assert.match(err.message, /could not connect to any of 2 hosts/)
      assert.match(err.message, new RegExp(`${hostPort(standby1)}: [^;]*refused`, 'i'))
      assert.match(err.message, new RegExp(`${hostPort(primary)}: [^;]*not in hot standby mode`))
    } finally {
      await c.startNode(standby1)
    }
    assert.equal((await landing(c, c.url([standby1, standby2, primary], { target_session_attrs: 'standby' }))).node.name, 'standby1')
  })

  test('every standby stopped: prefer-standby takes the primary on its second pass, standby fails naming every host', async () => {
    const c = cluster()
    const [primary, standby1, standby2] = [c.node('primary'), c.node('standby1'), c.node('standby2')]
    await Promise.all([c.stopNode(standby1, 'fast'), c.stopNode(standby2, 'fast')])
    try {
      const hosts = [standby1, standby2, primary]
      const landed = await landing(c, c.url(hosts, { target_session_attrs: 'prefer-standby' }))
      assert.deepEqual(landed, { node: primary, inRecovery: false })
      assert.equal((await landing(c, c.url(hosts, { target_session_attrs: 'any' }))).node.name, 'primary')
      const err = await connectError(c.url(hosts, { target_session_attrs: 'standby' }))
      assert.ok(err instanceof ConnectionError, inspect(err))
      assert.equal(err.code, 'PG_CONNECTION_REFUSED')
      assert.match(err.message, /could not connect to any of 3 hosts/)
      for (const n of hosts) assert.ok(err.message.includes(hostPort(n)), err.message)
    } finally {
      await Promise.all([c.startNode(standby1), c.startNode(standby2)])
    }
    await c.query(primary, `INSERT INTO ${TABLE} VALUES (2, 'while the standbys were down')`)
    for (const standby of [standby1, standby2]) {
      await c.waitForReplay(standby)
      assert.deepEqual((await c.query(standby, `SELECT note FROM ${TABLE} WHERE id = 2`)).rows, [['while the standbys were down']])
    }
  })

  test('the primary stopped: read-write fails naming it, any and prefer-standby go on', async () => {
    const c = cluster()
    const primary = c.node('primary')
    await c.stopNode(primary, 'fast')
    try {
      const err = await connectError(c.url(c.nodes, { target_session_attrs: 'read-write' }))
      assert.ok(err instanceof ConnectionError, inspect(err))
      assert.match(err.message, new RegExp(`${hostPort(primary)}: [^;]*refused`, 'i'))
      assert.equal((await landing(c, c.url(c.nodes))).node.name, 'standby1')
      assert.equal((await landing(c, c.url(c.nodes, { target_session_attrs: 'prefer-standby' }))).node.name, 'standby1')
    } finally {
      await c.startNode(primary)
    }
    assert.equal((await landing(c, c.url(c.nodes, { target_session_attrs: 'read-write' }))).node.name, 'primary')
  })
})

// prefer-standby's second pass tries every host again (as libpq does), and each
// failure is counted as a host of its own.
test('prefer-standby with no host reachable: the error counts each host once', async () => {
  const ports = [await closedPort(), await closedPort()]
  const err = await connectError(`postgres://postgres@127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}/postgres?target_session_attrs=prefer-standby`)
  assert.ok(err instanceof ConnectionError, inspect(err))
  assert.match(err.message, /could not connect to any of 2 hosts/)
})

// Last: it changes the cluster's topology for good.
describe('failover', () => {
  test('promote standby1, re-point standby2, bring the old primary back as a standby', async () => {
    const c = cluster()
    const [oldPrimary, standby1, standby2] = [c.node('primary'), c.node('standby1'), c.node('standby2')]
    const everyone = [oldPrimary, standby1, standby2]
    // Caught up, then a clean stop: its shutdown checkpoint reaches the standbys, so its WAL stays a prefix of the new timeline.
    for (const standby of [standby1, standby2]) await c.waitForReplay(standby)
    await c.stopNode(oldPrimary, 'fast')
    await c.promote(standby1)
    assert.equal(c.primary, standby1)
    assert.equal(standby1.role, 'primary')
    assert.equal((await landing(c, c.url(everyone, { target_session_attrs: 'read-write' }))).node.name, 'standby1')
    assert.equal((await landing(c, c.url(everyone, { target_session_attrs: 'standby' }))).node.name, 'standby2')

    await c.follow(standby2, standby1)
    await c.rejoinAsStandby(oldPrimary, standby1)
    assert.equal(oldPrimary.role, 'standby')
    assert.deepEqual(c.standbys.map((n) => n.name), ['primary', 'standby2'])
    const client = await connect(c.url(everyone, { target_session_attrs: 'read-write' }))
    try {
      assert.equal((await whereIs(c, client)).node, standby1)
      await client.query(`INSERT INTO ${TABLE} VALUES (3, 'after the failover')`)
    } finally {
      await client.end()
    }
    for (const standby of [oldPrimary, standby2]) {
      await c.waitForReplay(standby)
      const reader = await connect(c.url([standby], { target_session_attrs: 'standby' }))
      try {
        const { rows } = await reader.query<{ id: number }>(`SELECT id FROM ${TABLE} ORDER BY id`)
        assert.deepEqual(rows.map((r) => r.id), [1, 2, 3])
      } finally {
        await reader.end()
      }
    }
    assert.equal((await landing(c, c.url(everyone, { target_session_attrs: 'standby' }))).node.name, 'primary')
    assert.equal((await landing(c, c.url(everyone, { target_session_attrs: 'primary' }))).node.name, 'standby1')
  })
})
