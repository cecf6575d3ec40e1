import type { Measurement, Task } from './protocol.js'

/**
 * Runs `once` a first time to warm up (JIT, prepared statements), then
 * `task.repeat` times measuring wall time and this process's CPU time.
 */
export async function measure(task: Task, units: number, once: () => Promise<string>, timeFromEnd = false): Promise<Measurement> {
  let check = await once()
  const wallMs: number[] = []
  const cpuUs: number[] = []
  for (let i = 0; i < task.repeat; i++) {
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const c = await once()
    const t1 = performance.now()
    if (timeFromEnd) {
      // The workload reports its own interval (e.g. from abort() to rejection) through lastInterval.
      wallMs.push(lastInterval)
      cpuUs.push(0)
      if (c !== check) check = `inconsistent: ${check} vs ${c}`
      continue
    }
    const c1 = process.cpuUsage(c0)
    wallMs.push(t1 - t0)
    cpuUs.push(c1.user + c1.system)
    if (c !== check) check = `inconsistent: ${check} vs ${c}`
  }
  return { units, wallMs, cpuUs, peakRss: process.resourceUsage().maxRSS * 1024, check }
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
