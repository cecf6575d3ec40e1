// A consumer of a change stream that keeps the books a delivery guarantee is
// checked against: rows applied per transaction (a transaction cut off by a
// reconnect starts again with its begin, so its partial rows are dropped),
// every delivery of a transaction already handled (a duplicate), and the
// reconnections seen.

import type { ChangeMessage, Subscription } from '../../src/replication.js'
import { sleep } from './replication-db.js'

export interface Ledger {
  /** Row numbers, in the order their transactions were handled. */
  applied: number[]
  /** Transactions handled (a commit was received and the next message asked for). */
  transactions: number
  /** Begins of transactions that had already been handled: should stay 0. */
  duplicates: number
  /** Begins that restarted a transaction cut off midway. */
  restartedMidway: number
  reconnects: number
  /** Resolves once `total` rows are applied; rejects with the stream's error. */
  done: Promise<void>
}

export function keepLedger(sub: Subscription, total: number, options: { slowEvery?: number; slowMs?: number } = {}): Ledger {
  const ledger: Ledger = { applied: [], transactions: 0, duplicates: 0, restartedMidway: 0, reconnects: 0, done: Promise.resolve() }
  sub.on('reconnect', () => ledger.reconnects++)
  const handled = new Set<string>()
  ledger.done = (async () => {
    let partial: number[] | null = null
    let current = ''
    let count = 0
    for await (const m of sub as AsyncIterable<ChangeMessage>) {
      count++
      if (options.slowEvery !== undefined && count % options.slowEvery === 0) await sleep(options.slowMs ?? 1)
      switch (m.type) {
        case 'begin':
          if (partial !== null) ledger.restartedMidway++
          current = String(m.commitLsn)
          if (handled.has(current)) ledger.duplicates++
          partial = []
          break
        case 'insert':
          if (partial === null) throw new Error('an insert outside a transaction')
          partial.push(Number(m.row.n))
          break
        case 'commit':
          if (partial === null || String(m.commitLsn) !== current) throw new Error('a commit without its begin')
          // Handled: the loop asks for the next message, which acknowledges it.
          ledger.applied.push(...partial)
          handled.add(current)
          ledger.transactions++
          partial = null
          if (ledger.applied.length >= total) return
          break
      }
    }
  })()
  return ledger
}
