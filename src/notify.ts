import { ArgumentError } from './errors.js'
import type { Notification } from './protocol/backend.js'
import { quoteIdentifier } from './query/sql-template.js'

/** Called with each notification's payload ('' when none was given) and the whole notification. */
export type NotificationHandler = (payload: string, notification: Notification) => void

/** A channel being listened to; unlisten() stops this handler (and the LISTEN, once no handler is left). */
export interface Listener {
  readonly channel: string
  unlisten(): Promise<void>
}

/**
 * The channels a client listens to and their handlers. LISTEN is issued once
 * per channel however many handlers it has, and again for every channel after a
 * reconnect (the server forgets a lost session's LISTENs).
 */
export class Listeners {
  private readonly channels = new Map<string, Set<NotificationHandler>>()
  private readonly listening = new Map<string, Promise<void>>()

  constructor(private readonly run: (sql: string) => Promise<void>) {}

  async listen(channel: string, handler: NotificationHandler): Promise<Listener> {
    if (typeof channel !== 'string' || channel.length === 0) throw new ArgumentError('listen() needs a channel name')
    if (typeof handler !== 'function') throw new ArgumentError('listen() needs a handler function')
    const sql = `LISTEN ${quoteIdentifier(channel)}`
    let set = this.channels.get(channel)
    if (set === undefined) {
      set = new Set()
      this.channels.set(channel, set)
      this.listening.set(channel, this.run(sql))
    }
    // Added before LISTEN completes: no notification that arrives after it is missed.
    set.add(handler)
    try {
      await this.listening.get(channel)
    } catch (err) {
      set.delete(handler)
      if (set.size === 0 && this.channels.get(channel) === set) {
        this.channels.delete(channel)
        this.listening.delete(channel)
      }
      throw err
    }
    let active = true
    return {
      channel,
      unlisten: async () => {
        if (!active) return
        active = false
        set.delete(handler)
        if (set.size === 0 && this.channels.get(channel) === set) {
          this.channels.delete(channel)
          this.listening.delete(channel)
          await this.run(`UNLISTEN ${quoteIdentifier(channel)}`)
        }
      },
    }
  }

  /** LISTEN statements for every channel, to run first on a new connection. */
  relistenStatements(): string[] {
    return [...this.channels.keys()].map((c) => `LISTEN ${quoteIdentifier(c)}`)
  }

  get size(): number {
    return this.channels.size
  }

  deliver(n: Notification): void {
    const set = this.channels.get(n.channel)
    if (set === undefined) return
    for (const handler of set) {
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
