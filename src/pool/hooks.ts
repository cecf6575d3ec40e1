import { ArgumentError, ConnectionError } from '../errors.js'
import type { LaneQueryable } from '../queryable/lane-queryable.js'
import type { Queryable } from '../queryable/queryable.js'
import type { ReservedClient } from './reserved-client.js'

// A pool's hooks: what runs on each new connection, and around each
// reservation. A hook that fails discards its connection: what state it left
// there is unknown, and no later user may inherit it.

export interface PoolHooks {
  /**
   * Runs on each new connection before it takes any query (`SET search_path`,
   * prepared statements, settings). It may not leave a transaction open.
   */
  onConnect?: (client: Queryable) => unknown
  /** Runs when reserve() or begin() hands out a connection, before the caller gets it (`SET ROLE` for a tenant, say). */
  onReserve?: (client: ReservedClient) => unknown
  /** Runs when a reserved connection is released, before `reset` (to undo what onReserve did). */
  onRelease?: (client: ReservedClient) => unknown
  /** A statement run on a released connection before it serves anyone else: `'DISCARD ALL'`, or your own. */
  reset?: string
}

export const hookKeys = ['onConnect', 'onReserve', 'onRelease', 'reset'] as const

/** A pool's hooks, checked, as the steps the pool and its lanes run. */
export interface HookSteps {
  readonly connect: ((queries: LaneQueryable) => Promise<void>) | undefined
  /** Runs onReserve; on failure calls `discard` and throws the hook's error. */
  readonly reserve: (client: ReservedClient, discard: () => void) => Promise<void>
  readonly release: ((client: ReservedClient) => Promise<void>) | undefined
}

export function hookSteps(o: PoolHooks): HookSteps {
  for (const k of ['onConnect', 'onReserve', 'onRelease'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'function') throw new ArgumentError(`${k} must be a function`)
  }
  if (o.reset !== undefined && (typeof o.reset !== 'string' || o.reset.trim() === '')) throw new ArgumentError('reset must be an SQL statement, such as DISCARD ALL')
  const { onReserve } = o
  return { connect: connectStep(o), reserve: (client, discard) => runHook('onReserve', onReserve, client, discard), release: releaseSteps(o) }
}

/** The error of a failed hook: it names the hook, and that the connection was discarded. */
function hookError(name: string, err: unknown): ConnectionError {
  const why = err instanceof Error ? err.message : String(err)
  return new ConnectionError('PG_CONNECTION_CLOSED', `${name} failed, so its connection was discarded: ${why}`, { cause: err })
}

/** Runs `hook` (if any) with `client`; a failure calls `failed` (which discards the connection) and becomes its hookError. */
async function runHook<C>(name: string, hook: ((client: C) => unknown) | undefined, client: C, failed?: () => void): Promise<void> {
  if (hook === undefined) return
  try {
    await hook(client)
  } catch (err) {
    failed?.()
    throw hookError(name, err)
  }
}

/** The onConnect a pool's lanes run, or undefined: the hook, and no transaction left open by it. */
function connectStep(hooks: PoolHooks): ((queries: LaneQueryable) => Promise<void>) | undefined {
  const { onConnect } = hooks
  if (onConnect === undefined) return undefined
  const step = async (q: LaneQueryable): Promise<void> => {
    await onConnect(q)
    if (q.lane.transactionStatus !== 'I') throw new ArgumentError('it left a transaction open')
  }
  return (q) => runHook('onConnect', step, q)
}

/** What a released connection goes through before it serves anyone else, or undefined when nothing. */
function releaseSteps(hooks: PoolHooks): ((client: ReservedClient) => Promise<void>) | undefined {
  const { onRelease, reset } = hooks
  if (onRelease === undefined && reset === undefined) return undefined
  return async (client) => {
    await runHook('onRelease', onRelease, client)
    if (reset !== undefined) await runHook('reset', (c: ReservedClient) => c.simpleQuery(reset), client)
  }
}
