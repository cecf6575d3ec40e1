import { Client, type ClientOptions, type Listener } from '../../index.js'
import { toPostgresError, type Endpoint } from './errors.js'

// sql.listen() and sql.notify(). Notifications come on a connection of their
// own, a pipegres Client, which listens again by itself after a reconnect;
// onlisten is called after each LISTEN (the first, and after every
// reconnect), and `state.pid` follows the connection, as in postgres.js.

export interface ListenResult {
  state: { pid: number | undefined }
  unlisten(): Promise<void>
}

export class Notifications {
  #client: Client | undefined
  readonly #state = { pid: undefined as number | undefined }
  /** Whether anything was listened to on this connection (it listens again after a reconnect). */
  #listened = false
  /** onlisten callbacks of the channels listened to, called after each reconnect. */
  readonly #onlisten = new Set<() => void>()

  constructor(
    private readonly options: () => ClientOptions,
    private readonly endpoint: Endpoint,
  ) {}

  #connection(): Client {
    if (this.#client === undefined) {
      const c = new Client(this.options())
      c.on('disconnect', () => {
        // Listens again once reconnected: the next query's answer comes after the LISTENs pipegres sends first.
        if (this.#onlisten.size === 0 && !this.#listened) return
        // The backend it names is gone: no pid until the next connection is up (a stale one would name a dead backend).
        this.#state.pid = undefined
        const again = (): void => {
          c.query('select 1').then(
            () => {
              this.#state.pid = c.processId
              for (const f of this.#onlisten) f()
            },
            () => {
              if (this.#client === c) setTimeout(again, 100).unref()
            },
          )
        }
        again()
      })
      this.#client = c
    }
    return this.#client
  }

  async listen(channel: string, fn: (payload: string) => void, onlisten?: () => void): Promise<ListenResult> {
    const c = this.#connection()
    let listener: Listener
    try {
      listener = await c.listen(channel, (payload) => fn(payload))
      await c.query('select 1')
    } catch (err) {
      throw toPostgresError(err, this.endpoint, undefined)
    }
    this.#state.pid = c.processId
    this.#listened = true
    if (onlisten !== undefined) {
      this.#onlisten.add(onlisten)
      onlisten()
    }
    return {
      state: this.#state,
      unlisten: async () => {
        if (onlisten !== undefined) this.#onlisten.delete(onlisten)
        await listener.unlisten()
      },
    }
  }

  async end(): Promise<void> {
    const c = this.#client
    this.#client = undefined
    if (c !== undefined) await c.end()
  }

  destroy(reason: Error): void {
    const c = this.#client
    this.#client = undefined
    c?.destroy(reason)
  }
}
