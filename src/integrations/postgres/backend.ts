import { inspect } from 'node:util'
import type { ConnectionState, QuerySink, SentTrace } from '../../index.js'

/** @internal What tells the connection a query went to: a Sent, or a query's execution (see query.ts). */
export interface Where {
  readonly where: ConnectionState | undefined
}

// Which connection ran a query: postgres.js numbers its connections (the
// first argument of the `debug` function) and puts the connection's backend
// on every result as `state` ({ pid, secret }). pipegres tells each query's
// connection through the query's `sentTo` object, filled in by the lane that
// takes it; a lane keeps its identity across reconnections, as a postgres.js
// connection does, so its number stays and its state follows the new backend.

/** @internal A query's request (which cancel() aborts) and connection, filled in as it is sent (see QuerySink). */
export class Sent implements QuerySink {
  serverAddress = ''
  serverPort = 0
  inflight = 0
  connection: ConnectionState | undefined = undefined
  request: QuerySink['request'] = undefined
  via: SentTrace | null | undefined = undefined

  /** The connection that took the query: told to this object, or to its trace while queries are traced. */
  get where(): ConnectionState | undefined {
    return whereOf(this)
  }
}

/** @internal The connection a `sentTo` object was told of: its own, or its trace's while queries are traced. */
export function whereOf(sink: QuerySink): ConnectionState | undefined {
  return sink.connection ?? sink.via?.connection
}

let count = 0

/**
 * A connection's backend as postgres.js's result.state gives it: `pid` and
 * `secret` (its cancel key: a number for protocol 3.0's 4 bytes, a Buffer for
 * a longer 3.2 key), null before it connected. Both read the connection as it
 * is now. Printing it shows the pid only: the key lets anyone cancel its queries.
 */
export class Backend {
  readonly #connection: ConnectionState | undefined
  /** postgres.js's connection number, as the debug function gets it. */
  readonly id: number

  /** @internal */
  constructor(connection: ConnectionState | undefined) {
    this.#connection = connection
    this.id = connection === undefined ? 0 : ++count
  }

  get pid(): number | null {
    return this.#connection?.processId || null
  }

  get secret(): number | Buffer | null {
    const key = this.#connection?.secretKey
    if (key === undefined || this.pid === null) return null
    if (key.length === 4) return ((key[0]! << 24) | (key[1]! << 16) | (key[2]! << 8) | key[3]!) >>> 0
    return Buffer.from(key)
  }

  toJSON(): { pid: number | null } {
    return { pid: this.pid }
  }

  [inspect.custom](): string {
    return `Backend { pid: ${String(this.pid)} }`
  }
}

const backends = new WeakMap<ConnectionState, Backend>()

/** What a result says of a query no connection took (none known). */
export const noBackend = new Backend(undefined)

// Pipelined queries mostly go to the connection the last one went to: its backend is kept at hand.
let last: ConnectionState | undefined
let lastBackend = noBackend

/** @internal */
export function backendOf(connection: ConnectionState | undefined): Backend {
  if (connection === last) return lastBackend
  if (connection === undefined) return noBackend
  let b = backends.get(connection)
  if (b === undefined) backends.set(connection, (b = new Backend(connection)))
  last = connection
  lastBackend = b
  return b
}
