// Shared set-up of the replication tests: a table in a publication of its
// own, a subscription on a slot of its own, and reading a stream with a
// deadline. Everything is dropped again, so test files can share a database.

import type { Client } from '../../src/index.js'
import { subscribe, type ChangeMessage, type ReplicationStream, type Subscription, type SubscribeOptions } from '../../src/replication.js'
import { uniqueName } from './client.js'

export interface Fixture {
  table: string
  publication: string
  slot: string
  /** Drops the slot (waiting for its walsender to let go), the publication and the table. */
  drop(): Promise<void>
}

/** A table (columns given as SQL) and a publication of it; the slot name is reserved, not created. */
export async function fixture(db: Client, columns: string, prefix = 'rep'): Promise<Fixture> {
  const table = uniqueName(`${prefix}_t`)
  const publication = uniqueName(`${prefix}_p`)
  const slot = uniqueName(`${prefix}_s`).toLowerCase()
  await db.query(`CREATE TABLE ${table} (${columns})`)
  await db.query(`CREATE PUBLICATION ${publication} FOR TABLE ${table}`)
  return {
    table,
    publication,
    slot,
    async drop() {
      await dropSlot(db, slot)
      await db.query(`DROP PUBLICATION IF EXISTS ${publication}`)
      await db.query(`DROP TABLE IF EXISTS ${table} CASCADE`)
    },
  }
}

/** Drops a slot if it exists, once no walsender holds it any more. */
export async function dropSlot(db: Client, slot: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await db.query<{ active: boolean }>('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [slot])
    if (rows.length === 0) return
    if (!rows[0]!.active) {
      try {
        await db.query('SELECT pg_drop_replication_slot($1)', [slot])
        return
      } catch {
        // Taken again in between: look once more.
      }
    }
    await sleep(50)
  }
  throw new Error(`replication slot ${slot} stayed active`)
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Starts a subscription and waits until its stream runs, so changes made after this are seen. */
export async function startSubscription(db: Client, options: SubscribeOptions): Promise<{ sub: Subscription; reader: Reader<ChangeMessage> }> {
  const sub = subscribe(db, options)
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([sub.ready(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the subscription did not start within 10 s')), 10_000)))])
  } catch (err) {
    // A subscription that did not start is not left trying.
    await sub.close()
    throw err
  } finally {
    clearTimeout(timer)
  }
  return { sub, get reader() { return (readers.get(sub) ?? readers.set(sub, new Reader(sub)).get(sub))! } }
}

const readers = new WeakMap<Subscription, Reader<ChangeMessage>>()

/** Reads a stream in the background so a test can ask for "the next n messages" with a deadline. */
export class Reader<T> {
  private readonly it: AsyncIterator<T>
  private pending: Promise<IteratorResult<T>> | null = null
  readonly failed: Promise<never>

  constructor(stream: ReplicationStream<T>) {
    this.it = stream[Symbol.asyncIterator]()
    this.pending = this.it.next()
    this.failed = this.pending.then(() => new Promise<never>(() => {}))
    this.failed.catch(() => {})
  }

  /** The next message, or an error after `ms`. */
  async next(ms = 10_000): Promise<T> {
    const p = this.pending ?? this.it.next()
    this.pending = null
    let timer: NodeJS.Timeout | undefined
    const r = await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no message within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer))
    if (r.done === true) throw new Error('the stream ended')
    return r.value
  }

  /** The next `n` messages. */
  async take(n: number, ms = 10_000): Promise<T[]> {
    const out: T[] = []
    for (let i = 0; i < n; i++) out.push(await this.next(ms))
    return out
  }

  /** Messages until (and with) the next one `until` accepts. */
  async until(until: (m: T) => boolean, ms = 10_000): Promise<T[]> {
    const out: T[] = []
    for (;;) {
      const m = await this.next(ms)
      out.push(m)
      if (until(m)) return out
    }
  }
}

/**
 * The messages of the next transaction that has changes, begin to commit.
 * Before PostgreSQL 15 pgoutput also sends the transactions that changed
 * nothing published (DDL, catalog updates by ANALYZE), as a bare begin and
 * commit: those are passed over.
 */
export async function nextTransaction(reader: Reader<ChangeMessage>, ms = 10_000): Promise<ChangeMessage[]> {
  for (;;) {
    const tx = await reader.until((m) => m.type === 'commit', ms)
    if (tx.some((m) => m.type !== 'begin' && m.type !== 'commit')) return tx
  }
}

/** The messages of one transaction from begin to commit, without relation messages. */
export function types(ms: ChangeMessage[]): string[] {
  return ms.map((m) => m.type)
}
