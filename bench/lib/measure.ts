import { readdirSync, readFileSync } from 'node:fs'
import type { Measurement, Task } from './protocol.js'

/** Work around each repetition that is not timed: emptying a table before a load, checking it after. */
export interface Untimed {
  before?: () => Promise<void>
  /** Turns what the repetition returned into its checksum. */
  after?: (result: string) => Promise<string>
}

/** µs per clock tick of /proc/<pid>/stat (USER_HZ is 100 on every Linux the server binaries run on). */
const TICK_US = 10_000

/**
 * CPU time of one live process, µs, with what the children it has reaped
 * used; 0 if it is gone. Its own time comes from schedstat (nanoseconds: a
 * backend's share of a short repetition is well under stat's 10 ms tick), the
 * reaped children's from stat, the only place that keeps it.
 */
function procCpuUs(pid: number): number {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return 0
  }
  // The command name may hold spaces and parentheses: fields are counted from the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // f[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
  const reaped = (Number(f[13]) + Number(f[14])) * TICK_US
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'latin1').split(' ')[0]) / 1000 + reaped
  } catch {
    return (Number(f[11]) + Number(f[12])) * TICK_US + reaped
  }
}

/** The children of a process, from /proc/<pid>/task/<tid>/children (until it reaps them, those that exited too). */
export function childrenOf(pid: number): number[] {
  const out: number[] = []
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const list = readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').trim()
      if (list) for (const c of list.split(' ')) out.push(Number(c))
    }
  } catch {
    // Gone, or no permission: counted as nothing.
  }
  return out
}

/**
 * CPU time of the whole server so far, µs: every live process of its tree
 * (postmaster, backends, checkpointer, WAL writer..., and whatever process the
 * harness started it through) with the children each has reaped (backends
 * that have exited). Undefined where /proc cannot tell.
 */
export function serverCpuUs(root: number | undefined): number | undefined {
  if (root === undefined) return undefined
  const tree = (pid: number): number => {
    let us = procCpuUs(pid)
    for (const c of childrenOf(pid)) us += tree(c)
    return us
  }
  const us = tree(root)
  return us === 0 ? undefined : us
}

let latencies: number[] | undefined
/**
 * For workloads that time each query: the array a repetition pushes its
 * per-query latencies (ms) into; measure() turns it into p50 and p99.
 */
export function latencySink(): number[] {
  latencies = []
  return latencies
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/**
 * Runs `once` a first time to warm up (JIT, prepared statements), then
 * `task.repeat` times measuring wall time, this process's CPU time and the
 * server's CPU time.
 */
export async function measure(task: Task, units: number, once: () => Promise<string>, timeFromEnd = false, untimed: Untimed = {}): Promise<Measurement> {
  const run = async (): Promise<{ c: string; wall: number; cpu: number; server: number | undefined }> => {
    await untimed.before?.()
    latencies = undefined
    const s0 = serverCpuUs(task.serverPid)
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const c = await once()
    const t1 = performance.now()
    const c1 = process.cpuUsage(c0)
    const s1 = serverCpuUs(task.serverPid)
    const server = s0 === undefined || s1 === undefined ? undefined : s1 - s0
    return { c: untimed.after ? await untimed.after(c) : c, wall: t1 - t0, cpu: c1.user + c1.system, server }
  }
  let check = (await run()).c
  const wallMs: number[] = []
  const cpuUs: number[] = []
  const serverUs: number[] = []
  const p50Us: number[] = []
  const p99Us: number[] = []
  for (let i = 0; i < task.repeat; i++) {
    const { c, wall, cpu, server } = await run()
    if (c !== check) check = `inconsistent: ${check} vs ${c}`
    if (timeFromEnd) {
      // The workload reports its own interval (e.g. from abort() to rejection) through lastInterval.
      wallMs.push(lastInterval)
      cpuUs.push(0)
      continue
    }
    wallMs.push(wall)
    cpuUs.push(cpu)
    if (server !== undefined) serverUs.push(server)
    if (latencies && latencies.length > 0) {
      const sorted = latencies.sort((a, b) => a - b)
      p50Us.push(percentile(sorted, 0.5) * 1000)
      p99Us.push(percentile(sorted, 0.99) * 1000)
    }
  }
  return {
    units,
    wallMs,
    cpuUs,
    ...(serverUs.length === wallMs.length && serverUs.length > 0 ? { serverCpuUs: serverUs } : {}),
    ...(p50Us.length > 0 ? { p50Us, p99Us } : {}),
    peakRss: process.resourceUsage().maxRSS * 1024,
    check,
  }
}

let lastInterval = 0
/** For latency workloads: the interval the last repetition measured, in ms. */
export function reportInterval(ms: number): void {
  lastInterval = ms
}

/** The child's entry: parse the task, run it, print the measurement. */
export async function childMain(run: (task: Task) => Promise<Measurement>): Promise<void> {
  const task = JSON.parse(process.argv[2]!) as Task
  try {
    const m = await run(task)
    process.stdout.write(JSON.stringify(m) + '\n')
  } catch (err) {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exitCode = 1
  }
}
