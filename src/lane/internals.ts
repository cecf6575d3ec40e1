import type { EventEmitter } from 'node:events'
import type { Lane } from './lane.js'

// What the test suite reads of a client's or a pool's insides (listener
// counts, requests in flight), now that those live in #private fields. Not
// exported from the package: a leak or a miscount shows up here first.

/** The insides of a Client (one lane) or a Pool (its lanes, the notifier's included). */
export interface Internals {
  readonly emitter: EventEmitter
  lanes(): Lane[]
}

const registry = new WeakMap<object, Internals>()

export function exposeInternals(owner: object, internals: Internals): void {
  registry.set(owner, internals)
}

/** The insides of a Client or Pool, for tests; undefined for anything else. */
export function internalsOf(owner: object): Internals | undefined {
  return registry.get(owner)
}
