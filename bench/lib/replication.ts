// The replication workloads: a change stream read by each client from the
// same publication, with the changes made by a writer connection of
// pipegres's own (one statement per repetition: its CPU is negligible).
//
//   replication      one transaction inserting `size` rows
//   replication-tx   `size` single-row transactions (a DO loop committing each)
//
// A client subscribes first (postgres.js only has temporary slots, created
// when it subscribes), then the writer starts. The timed window runs from the
// first change received to the last: the streaming phase, in which the
// client's decoding is the work. Client CPU, server CPU and wall time are all
// read over that window.

import { connect, type Client } from '../../src/index.js'
import { serverCpuUs } from './measure.js'
import type { Measurement, Task } from './protocol.js'

export const REPL_TABLE = 'bench_repl'
export const REPL_PUBLICATION = 'bench_repl_pub'

/** The table (created once) and a publication of its inserts only, so that emptying it is not streamed. */
export async function replicationSetup(task: Task): Promise<Client> {
  const db = await connect({ ...task.target, sslmode: 'disable' })
  await db.simpleQuery(`CREATE TABLE IF NOT EXISTS ${REPL_TABLE} (id int4, name text, qty int4, at timestamptz)`)
  const { rows } = await db.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [REPL_PUBLICATION])
  if (rows.length === 0) await db.query(`CREATE PUBLICATION ${REPL_PUBLICATION} FOR TABLE ${REPL_TABLE} WITH (publish = 'insert')`)
  return db
}

/** Starts the changes of one repetition; resolves once they are committed. */
export function writeChanges(db: Client, task: Task): Promise<unknown> {
  const n = task.size
  if (task.workload === 'replication') {
    return db.query(`INSERT INTO ${REPL_TABLE} SELECT g, 'name ' || g, g % 100, now() FROM generate_series(1, ${n}) g`)
  }
  return db.simpleQuery(`DO $$ BEGIN FOR i IN 1..${n} LOOP INSERT INTO ${REPL_TABLE} VALUES (i, 'name ' || i, i % 100, now()); COMMIT; END LOOP; END $$`)
}

/** Times the window between the first and the last of `n` changes a client reports through `seen`. */
export class Window {
  private count = 0
  private t0 = 0
  private c0: NodeJS.CpuUsage = { user: 0, system: 0 }
  private s0: number | undefined
  sum = 0
  wall = 0
  cpu = 0
  server: number | undefined
  private finish!: () => void
  readonly done = new Promise<void>((r) => (this.finish = r))

  constructor(
    private readonly n: number,
    private readonly serverPid: number | undefined,
  ) {}

  /** One insert received, with its id. */
  seen(id: number): void {
    if (this.count === 0) {
      this.s0 = serverCpuUs(this.serverPid)
      this.c0 = process.cpuUsage()
      this.t0 = performance.now()
    }
    this.count++
    this.sum += id
    if (this.count === this.n) {
      this.wall = performance.now() - this.t0
      const c = process.cpuUsage(this.c0)
      this.cpu = c.user + c.system
      const s1 = serverCpuUs(this.serverPid)
      this.server = this.s0 === undefined || s1 === undefined ? undefined : s1 - this.s0
      this.finish()
    }
  }
}

/**
 * Runs a warm-up and `task.repeat` measured repetitions. `once` subscribes,
 * calls `start()` once it streams, feeds the window, and cleans up.
 */
export async function measureReplication(task: Task, once: (w: Window, start: () => Promise<unknown>) => Promise<void>): Promise<Measurement> {
  const db = await replicationSetup(task)
  const m: Measurement = { units: task.size, wallMs: [], cpuUs: [], serverCpuUs: [], peakRss: 0, check: '' }
  try {
    for (let i = 0; i <= task.repeat; i++) {
      await db.query(`TRUNCATE ${REPL_TABLE}`)
      const w = new Window(task.size, task.serverPid)
      let written: Promise<unknown> = Promise.resolve()
      await once(w, () => (written = writeChanges(db, task)))
      await written
      const check = `${task.size}:${w.sum}`
      if (i === 0) {
        m.check = check
        continue
      }
      if (check !== m.check) m.check = `inconsistent: ${m.check} vs ${check}`
      m.wallMs.push(w.wall)
      m.cpuUs.push(w.cpu)
      if (w.server !== undefined) m.serverCpuUs!.push(w.server)
    }
  } finally {
    await db.end()
  }
  if (m.serverCpuUs!.length !== m.wallMs.length) delete m.serverCpuUs
  m.peakRss = process.resourceUsage().maxRSS * 1024
  return m
}
