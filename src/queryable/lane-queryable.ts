import type { Request } from '../connection/request.js'
import type { TransactionStatus } from '../protocol/backend.js'
import { Queryable } from './queryable.js'
import type { QueryDefaults } from './query-options.js'

/** What the query methods need of a lane (lane/lane.ts's Lane, which lies below this layer and knows nothing of it). */
export interface QueryLane {
  send(req: Request, owner: object | null): void
  readonly transactionStatus: TransactionStatus
}

/**
 * The query methods over a lane, for the library's own use: a pool's
 * listening connection and a replication connection run their statements
 * through it. Not part of the public API.
 */
export class LaneQueryable<L extends QueryLane = QueryLane> extends Queryable {
  constructor(
    readonly lane: L,
    private readonly queryDefaults: QueryDefaults,
    /** The holder its requests are sent for (the lane's onConnect), or null. */
    private readonly owner: object | null = null,
  ) {
    super()
  }

  /** @internal */
  protected defaults(): QueryDefaults {
    return this.queryDefaults
  }

  /** @internal */
  protected dispatch(req: Request): void {
    this.lane.send(req, this.owner)
  }
}
