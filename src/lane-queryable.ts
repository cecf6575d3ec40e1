import type { Lane } from './client-lane.js'
import type { Request } from './connection/request.js'
import { Queryable, type QueryDefaults } from './queryable.js'

/**
 * The query methods over a lane, for the library's own use: a pool's
 * listening connection and a replication connection run their statements
 * through it. Not part of the public API.
 */
export class LaneQueryable extends Queryable {
  constructor(
    readonly lane: Lane,
    private readonly queryDefaults: QueryDefaults,
    /** The holder its requests are sent for (the lane's onConnect), or null. */
    private readonly owner: object | null = null,
  ) {
    super()
  }

  protected defaults(): QueryDefaults {
    return this.queryDefaults
  }

  protected dispatch(req: Request): void {
    this.lane.send(req, this.owner)
  }
}
