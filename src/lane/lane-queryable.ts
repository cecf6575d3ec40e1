import type { Request } from '../connection/request.js'
import type { TransactionStatus } from '../protocol/backend.js'
import { Queryable, type QueryDefaults } from '../queryable/queryable.js'

/** What the query methods need of a lane (Lane, in lane.ts, which builds LaneQueryables: named here so that neither file imports the other). */
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
