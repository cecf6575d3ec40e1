// A primary-with-standbys cluster (test/support/servers/cluster.ts) for a test file:
//
//   const cluster = useCluster()           // at the top of the file, or in a describe()
//   test('...', async () => {
//     const { node } = await landing(cluster(), cluster().url(cluster().standbys, { target_session_attrs: 'standby' }))
//   })
//
// The cluster starts in a before() hook and stops in the matching after(), so
// it is shared by the tests of that scope; the harness's exit hook stops it if
// the process dies first. PIPEGRES_TEST_PGBIN picks the installation, as for
// the managed server.

import { after, before } from 'node:test'
import { connect, type Client } from '../../../src/index.js'
import { startCluster, stopClustersOnSignals, type Cluster, type ClusterNode, type StartClusterOptions } from './cluster.js'

export type { Cluster, ClusterNode, NodeRole, StopMode } from './cluster.js'

let signalsHandled = false

/** Starts a cluster before the tests of the calling scope and stops it after them; the returned function gives it (inside tests and hooks). */
export function useCluster(options: Omit<StartClusterOptions, 'binDir'> = {}): () => Cluster {
  let cluster: Cluster | undefined
  before(async () => {
    if (!signalsHandled) stopClustersOnSignals()
    signalsHandled = true
    cluster = await startCluster({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined, ...options })
  })
  after(() => cluster?.stop())
  return () => {
    if (!cluster) throw new Error('the cluster is not running: useCluster() gives it to tests and hooks that run after its before() hook')
    return cluster
  }
}

export interface Landing {
  /** The node the session is on, found by inet_server_port(). */
  node: ClusterNode
  /** pg_is_in_recovery() as the server reports it. */
  inRecovery: boolean
}

/** Which node a connected client is on, asked through the client itself. */
export async function whereIs(cluster: Cluster, client: Client): Promise<Landing> {
  const { rows } = await client.query<{ r: boolean; port: number }>('SELECT pg_is_in_recovery() AS r, inet_server_port() AS port')
  const port = Number(rows[0]?.port)
  const node = cluster.nodes.find((n) => n.port === port)
  if (!node) throw new Error(`the session is on port ${port}, which is no node of the cluster (${cluster.nodes.map((n) => `${n.name}:${n.port}`).join(', ')})`)
  return { node, inRecovery: rows[0]!.r }
}

/** Connects with `url`, reports where the session landed, and closes it. */
export async function landing(cluster: Cluster, url: string): Promise<Landing> {
  const client = await connect(url)
  try {
    return await whereIs(cluster, client)
  } finally {
    await client.end()
  }
}
