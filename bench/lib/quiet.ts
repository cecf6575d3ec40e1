// Whether the machine is quiet enough to measure on. A benchmark that shares
// its CPUs with a test suite or a build measures the neighbour as much as the
// client: CPU per row grows with cache and scheduler contention, and the
// ranking between clients can flip. Before each segment the runner samples how
// busy the machine is while nothing of its own runs (the server idle between
// children), waits a while for a quiet moment, and marks what it measured when
// none came.

import { readFileSync, readdirSync } from 'node:fs'
import { cpus } from 'node:os'

/** Busy share of all CPUs (0..1) above which a segment counts as disturbed: a fifth of one core on a 2-core machine. */
export const BUSY_LIMIT = 0.1

interface CpuTimes {
  busy: number
  total: number
}

function cpuTimes(): CpuTimes | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number)
    const idle = fields[3]! + (fields[4] ?? 0)
    const total = fields.reduce((a, b) => a + b, 0)
    return { busy: total - idle, total }
  } catch {
    return undefined
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The share of all CPUs that was busy over the next `ms`, or undefined where /proc/stat cannot be read (not Linux). */
export async function busyShare(ms = 500): Promise<number | undefined> {
  const a = cpuTimes()
  await sleep(ms)
  const b = cpuTimes()
  if (a === undefined || b === undefined || b.total === a.total) return undefined
  return (b.busy - a.busy) / (b.total - a.total)
}

/** The processes that used the most CPU over `ms` (other than `exclude`), for the message that names them. */
export async function busiest(ms: number, exclude: ReadonlySet<number>, top = 3): Promise<string[]> {
  const ticks = (): Map<number, { name: string; t: number }> => {
    const out = new Map<number, { name: string; t: number }>()
    let pids: string[] = []
    try {
      pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d))
    } catch {
      return out
    }
    for (const p of pids) {
      try {
        const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
        const close = stat.lastIndexOf(')')
        const name = stat.slice(stat.indexOf('(') + 1, close)
        const f = stat.slice(close + 2).split(' ')
        out.set(Number(p), { name, t: Number(f[11]) + Number(f[12]) })
      } catch {
        // Gone.
      }
    }
    return out
  }
  const a = ticks()
  await sleep(ms)
  const b = ticks()
  const used: { pid: number; name: string; share: number }[] = []
  for (const [pid, { name, t }] of b) {
    if (exclude.has(pid)) continue
    const before = a.get(pid)?.t ?? t
    if (t > before) used.push({ pid, name, share: ((t - before) / 100) / (ms / 1000) })
  }
  return used
    .sort((x, y) => y.share - x.share)
    .slice(0, top)
    .map((u) => `${u.name} (pid ${u.pid}, ${Math.round(u.share * 100)}% of a core)`)
}

export interface QuietCheck {
  /** The lowest busy share seen while waiting; undefined where it cannot be measured. */
  busy: number | undefined
  quiet: boolean
}

/**
 * Waits up to `waitMs` for half a second in which other processes used less
 * than BUSY_LIMIT of the machine. Quiet is assumed where it cannot be measured
 * (the report says so through `busy` being undefined).
 */
export async function waitForQuiet(waitMs: number): Promise<QuietCheck> {
  const deadline = Date.now() + waitMs
  let best: number | undefined
  for (;;) {
    const share = await busyShare(500)
    if (share === undefined) return { busy: undefined, quiet: true }
    best = best === undefined ? share : Math.min(best, share)
    if (share < BUSY_LIMIT) return { busy: share, quiet: true }
    if (Date.now() >= deadline) return { busy: best, quiet: false }
  }
}

/** "37% of 2 CPUs" */
export const describeBusy = (share: number): string => `${Math.round(share * 100)}% of ${cpus().length} CPUs`
