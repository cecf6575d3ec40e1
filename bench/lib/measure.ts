import type { Measurement, Task } from './protocol.js'

/** Work around each repetition that is not timed: emptying a table before a load, checking it after. */
export interface Untimed {
  before?: () => Promise<void>
  /** Turns what the repetition returned into its checksum. */
  after?: (result: string) => Promise<string>
}

/**
 * Runs `once` a first time to warm up (JIT, prepared statements), then
 * `task.repeat` times measuring wall time and this process's CPU time.
 */
export async function measure(task: Task, units: number, once: () => Promise<string>, timeFromEnd = false, untimed: Untimed = {}): Promise<Measurement> {
  const run = async (): Promise<{ c: string; wall: number; cpu: number }> => {
    await untimed.before?.()
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const c = await once()
    const t1 = performance.now()
    const c1 = process.cpuUsage(c0)
    return { c: untimed.after ? await untimed.after(c) : c, wall: t1 - t0, cpu: c1.user + c1.system }
  }
  let check = (await run()).c
  const wallMs: number[] = []
  const cpuUs: number[] = []
  for (let i = 0; i < task.repeat; i++) {
    const { c, wall, cpu } = await run()
    if (timeFromEnd) {
      // The workload reports its own interval (e.g. from abort() to rejection) through lastInterval.
      wallMs.push(lastInterval)
      cpuUs.push(0)
      if (c !== check) check = `inconsistent: ${check} vs ${c}`
      continue
    }
    wallMs.push(wall)
    cpuUs.push(cpu)
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
