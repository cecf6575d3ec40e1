// The report of one workload: the Markdown table of every client's figures
// (medians with min–max, ratios to the first client, CPU per unit, server
// load), and the notes under it.

import { describeBusy } from './quiet.js'
import type { Workload } from './workload-table.js'

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2))

export interface Row {
  label: string
  client: string
  perSecond: number[]
  cpuPerUnit: number[]
  serverPerUnit: number[]
  /** Server CPU over wall time of each repetition: the share of one core the server used. */
  serverBusy: number[]
  p50: number[]
  p99: number[]
  peakRss: number[]
  /** Each child's checksum of what it read or wrote. */
  checks: string[]
  /** The busiest share of the machine other processes used before one of this client's children, where it was above the limit. */
  busy: number[]
  skipped?: string
  failures: string[]
}

/** The note under a table some of whose figures were taken on a busy machine. */
function busyNote(rows: Row[], rounds: number): string | undefined {
  const disturbed = rows.filter((r) => r.busy.length > 0)
  if (disturbed.length === 0) return undefined
  const worst = Math.max(...disturbed.flatMap((r) => r.busy))
  return `† ${disturbed.map((r) => `${r.label} (${r.busy.length} of ${rounds} rounds)`).join(', ')}: measured while other processes used up to ${describeBusy(worst)}; not a quiet-machine figure.`
}

export function report(w: Workload, rows: Row[], rounds: number): string {
  if (w.show === 'latency') {
    const lines = [`### ${w.title}`, '', '| client | ms, median (min–max) |', '|---|---|']
    for (const r of rows) {
      if (r.perSecond.length === 0) continue
      const ms = r.perSecond.map((x) => 1000 / x)
      lines.push(`| ${r.busy.length > 0 ? `${r.label} †` : r.label} | ${median(ms).toFixed(2)} (${Math.min(...ms).toFixed(2)}–${Math.max(...ms).toFixed(2)}) |`)
    }
    const note = busyNote(rows, rounds)
    return (note ? [...lines, '', note] : lines).join('\n')
  }
  const base = rows[0]!
  const baseRate = median(base.perSecond)
  const baseCpu = median(base.cpuPerUnit)
  const latency = rows.some((r) => r.p50.length > 0)
  const server = !w.serverless && rows.some((r) => r.serverPerUnit.length > 0)
  const unit = w.unit === 'query' ? 'queries' : w.unit === 'message' ? 'messages' : w.unit === 'request' ? 'requests' : w.unit === 'change' ? 'changes' : 'rows'
  const head = [`client`, `${unit}/s, median (min–max)`, `vs ${base.label}`, `client CPU µs/${w.unit}`, 'CPU vs pipegres']
  // How much of one core the server used: near 100% the server, not the client, is the limit.
  if (server) head.push(`server CPU µs/${w.unit}`, 'server busy')
  if (latency) head.push('p50 µs', 'p99 µs')
  if (!w.serverless) head.push('peak RSS MB')
  const lines = [`### ${w.title}`, '', `| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`]
  const notes: string[] = []
  const note = busyNote(rows, rounds)
  if (note) notes.push(note)
  for (const r of rows) {
    if (r.skipped && r.skipped !== 'not selected') notes.push(`${r.label}: ${r.skipped}.`)
    if (r.failures.length > 0) notes.push(`${r.label}: ${r.failures.length} of ${rounds} rounds failed (${r.failures[0]}).`)
    if (r.perSecond.length === 0) continue
    const rate = median(r.perSecond)
    const cpu = median(r.cpuPerUnit)
    const cells = [
      r.busy.length > 0 ? `${r.label} †` : r.label,
      `${fmt(rate)} (${fmt(Math.min(...r.perSecond))}–${fmt(Math.max(...r.perSecond))})`,
      (rate / baseRate).toFixed(2),
      r.client === 'pgbench' ? `${cpu.toFixed(2)} (C)` : cpu.toFixed(2),
      (cpu / baseCpu).toFixed(2),
    ]
    if (server) {
      const has = r.serverPerUnit.length > 0
      cells.push(has ? median(r.serverPerUnit).toFixed(2) : '–', has ? `${Math.round(median(r.serverBusy) * 100)}%` : '–')
    }
    if (latency) cells.push(r.p50.length > 0 ? median(r.p50).toFixed(0) : '–', r.p99.length > 0 ? median(r.p99).toFixed(0) : '–')
    if (!w.serverless) cells.push(r.client === 'pgbench' ? '–' : String(Math.round(median(r.peakRss) / 1048576)))
    lines.push(`| ${cells.join(' | ')} |`)
  }
  if (notes.length > 0) lines.push('', ...notes)
  return lines.join('\n')
}
