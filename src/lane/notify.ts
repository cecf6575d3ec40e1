import { ArgumentError, ConnectionError } from '../errors.js'
import type { Notification } from '../protocol/backend.js'
import { utf8Length } from '../protocol/utf8.js'
import { quoteIdentifier } from '../query/sql-template.js'

/** Called with each notification's payload ('' when none was given) and the whole notification. */
export type NotificationHandler = (payload: string, notification: Notification) => void

/** A channel being listened to; unlisten() stops this handler (and the LISTEN, once no handler is left). */
export interface Listener {
  readonly channel: string
  unlisten(): Promise<void>
  /**
   * `await using l = await db.listen(...)`: unlisten() when the scope exits;
   * on a connection already closed there is nothing left to unlisten.
   */
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * The channels a client listens to and their handlers. LISTEN is issued once
 * per channel however many handlers it has, and again for every channel after a
 * reconnect (the server forgets a lost session's LISTENs).
 */
/** One listen() call: the same function listened twice is two entries, each with its own unlisten(). */
interface Entry {
  readonly handler: NotificationHandler
}

// Channel names are identifiers, which the server truncates to NAMEDATALEN - 1
// bytes (63 in every standard build): a longer name would LISTEN to a
// different channel than the one asked for, and its notifications would never
// match (pg_notify refuses such names outright).
const MAX_CHANNEL_BYTES = 63

export class Listeners {
  private readonly channels = new Map<string, Set<Entry>>()
  private readonly listening = new Map<string, Promise<void>>()
  /**
   * Channels whose LISTEN has completed: the ones to listen to again on a new
   * connection. A LISTEN still pending goes to that connection by itself (or
   * fails with the old one, and its listen() with it).
   */
  private readonly confirmed = new Set<string>()

  constructor(private readonly run: (sql: string) => Promise<void>) {}

  async listen(channel: string, handler: NotificationHandler): Promise<Listener> {
    if (typeof channel !== 'string' || channel.length === 0) throw new ArgumentError('listen() needs a channel name')
    if (typeof handler !== 'function') throw new ArgumentError('listen() needs a handler function')
    const bytes = utf8Length(channel)
    if (bytes > MAX_CHANNEL_BYTES) {
      throw new ArgumentError(`a channel name can be at most ${MAX_CHANNEL_BYTES} bytes long (the server truncates longer names); this one has ${bytes}`)
    }
    const sql = `LISTEN ${quoteIdentifier(channel)}`
    let set = this.channels.get(channel)
    if (set === undefined) {
      const created: Set<Entry> = new Set()
      set = created
      this.channels.set(channel, created)
      const started = this.run(sql)
      this.listening.set(channel, started)
      started.then(
        () => {
          if (this.channels.get(channel) === created) this.confirmed.add(channel)
        },
        () => undefined,
      )
    }
    // Added before LISTEN completes: no notification that arrives after it is missed.
    const entry: Entry = { handler }
    set.add(entry)
    try {
      await this.listening.get(channel)
    } catch (err) {
      set.delete(entry)
      if (set.size === 0 && this.channels.get(channel) === set) this.forget(channel)
      throw err
    }
    let active = true
    const unlisten = async (): Promise<void> => {
      if (!active) return
      active = false
      set.delete(entry)
      if (set.size === 0 && this.channels.get(channel) === set) {
        this.forget(channel)
        await this.run(`UNLISTEN ${quoteIdentifier(channel)}`)
      }
    }
    return {
      channel,
      unlisten,
      // The server forgets a closed session's LISTENs: an UNLISTEN refused for a closed connection has nothing left to do.
      [Symbol.asyncDispose]: () => unlisten().catch((err: unknown) => {
        if (!(err instanceof ConnectionError)) throw err
      }),
    }
  }

  private forget(channel: string): void {
    this.channels.delete(channel)
    this.listening.delete(channel)
    this.confirmed.delete(channel)
  }

  /** LISTEN statements for every channel listened to, to run first on a new connection. */
  relistenStatements(): string[] {
    return [...this.confirmed].map((c) => `LISTEN ${quoteIdentifier(c)}`)
  }

  get size(): number {
    return this.channels.size
  }

  deliver(n: Notification): void {
    const set = this.channels.get(n.channel)
    if (set === undefined) return
    for (const { handler } of set) {
      try {
        handler(n.payload, n)
      } catch (err) {
        // A throwing handler is the application's bug: report it as such, never
        // inside the connection's reading loop.
        queueMicrotask(() => {
          throw err
        })
      }
    }
  }
}
