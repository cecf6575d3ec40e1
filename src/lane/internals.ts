import type { EventEmitter } from 'node:events'
import type { ConnectionConfig } from '../config/types.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { Lane } from './lane.js'

// What other parts of pipegres read of a client's or a pool's insides, now
// that those live in #private fields: pipegres/replication (subscribe(db) and
// replicate(db) open their own connection with the settings and the type
// catalog of `db`, so a type registered on it decodes in the stream too), and
// the test suite (listener counts, requests in flight: a leak or a miscount
// shows up here first). A WeakMap, not public members: neither is part of the
// API of Client or Pool.

/** The insides of a Client (one lane) or a Pool (its lanes, the notifier's included). */
export interface Internals {
  /** 'Client' or 'Pool', for messages. */
  readonly kind: 'Client' | 'Pool'
  readonly config: ConnectionConfig
  readonly catalog: TypeCatalog
  readonly emitter: EventEmitter
  lanes(): Lane[]
}

const registry = new WeakMap<object, Internals>()

export function exposeInternals(owner: object, internals: Internals): void {
  registry.set(owner, internals)
}

/** The insides of a Client or Pool; undefined for anything else. */
export function internalsOf(owner: object): Internals | undefined {
  return registry.get(owner)
}
