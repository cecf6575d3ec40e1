import type { Request } from './connection/request.js'
import { ArgumentError, ConnectionError, PipegresError } from './errors.js'
import type { ExtendedQuery } from './query/extended-query.js'
import type { Result } from './query/result.js'
import { makeQuery, Queryable, type QueryDefaults } from './queryable.js'

export interface TransactionOptions {
  isolation?: 'serializable' | 'repeatable read' | 'read committed' | 'read uncommitted'
  readOnly?: boolean
  deferrable?: boolean
}

/** What a transaction runs on: a client (or a pool's reserved connection) that can be held. */
export interface TransactionHost {
  hold(holder: object): Promise<void>
  release(holder: object): void
  send(req: Request, owner: object | null): void
}

/**
 * The transaction ended without committing because a statement in it failed
 * (the server answered COMMIT with ROLLBACK), or COMMIT's fate is unknown.
 */
export class TransactionError extends PipegresError {}

const isolations = new Set(['serializable', 'repeatable read', 'read committed', 'read uncommitted'])

function beginSql(o: TransactionOptions): string {
  if (typeof o !== 'object' || o === null) throw new ArgumentError('transaction options must be an object')
  for (const k of Object.keys(o)) {
    if (k !== 'isolation' && k !== 'readOnly' && k !== 'deferrable') throw new ArgumentError(`unknown transaction option "${k}"`)
  }
  const modes: string[] = []
  if (o.isolation !== undefined) {
    if (!isolations.has(o.isolation)) throw new ArgumentError(`isolation must be one of ${[...isolations].map((i) => `'${i}'`).join(', ')}`)
    modes.push(`ISOLATION LEVEL ${o.isolation.toUpperCase()}`)
  }
  if (o.readOnly !== undefined) modes.push(o.readOnly ? 'READ ONLY' : 'READ WRITE')
  if (o.deferrable !== undefined) modes.push(o.deferrable ? 'DEFERRABLE' : 'NOT DEFERRABLE')
  return modes.length === 0 ? 'BEGIN' : `BEGIN ${modes.join(', ')}`
}

/**
 * The queries of one transaction (or savepoint): pipelined on the connection
 * the transaction holds. Once the transaction is over, it refuses queries
 * rather than run them outside it.
 */
export class Transaction extends Queryable {
  private over = false
  private savepoints = 0

  constructor(
    private readonly host: TransactionHost,
    private readonly token: object,
    private readonly queryDefaults: QueryDefaults,
    private readonly depth = 0,
  ) {
    super()
  }

  protected defaults(): QueryDefaults {
    return this.queryDefaults
  }

  protected dispatch(req: Request): void {
    if (this.over) {
      req.fail(new ArgumentError('this transaction is over: run the query on the client, or inside the transaction function'), false)
      return
    }
    this.host.send(req, this.token)
  }

  /** Sends a statement of the transaction's own (BEGIN, COMMIT, SAVEPOINT ...) and returns its request. */
  control(sql: string): ExtendedQuery {
    const req = makeQuery(this.queryDefaults, sql, undefined, { prepare: false })
    this.host.send(req, this.token)
    return req
  }

  close(): void {
    this.over = true
  }

  /**
   * Runs `fn` inside a savepoint: RELEASE when it succeeds, ROLLBACK TO the
   * savepoint (then the error is rethrown) when it throws. Savepoints nest.
   */
  async savepoint<T>(fn: (sp: Transaction) => Promise<T>): Promise<T> {
    if (typeof fn !== 'function') throw new ArgumentError('savepoint() needs a function')
    if (this.over) throw new ArgumentError('this transaction is over')
    const name = `pipegres_sp_${this.depth + 1}_${++this.savepoints}`
    const sp = new Transaction(this.host, this.token, this.queryDefaults, this.depth + 1)
    const start = this.control(`SAVEPOINT ${name}`).promise
    let result: T
    try {
      result = await fn(sp)
    } catch (err) {
      sp.close()
      await this.control(`ROLLBACK TO SAVEPOINT ${name}`).promise.catch(() => undefined)
      await start.catch(() => undefined)
      throw err
    }
    sp.close()
    await start
    await this.control(`RELEASE SAVEPOINT ${name}`).promise
    return result
  }
}

/** BEGIN, fn, COMMIT — or ROLLBACK and rethrow. The host is held throughout. */
export async function runTransaction<T>(
  host: TransactionHost & { defaultsForTransaction(): QueryDefaults },
  options: TransactionOptions,
  fn: (tx: Transaction) => Promise<T>,
): Promise<T> {
  const begin = beginSql(options)
  const token = {}
  await host.hold(token)
  const tx = new Transaction(host, token, host.defaultsForTransaction())
  try {
    const started = tx.control(begin)
    let result: T
    try {
      result = await fn(tx)
    } catch (err) {
      tx.close()
      await tx.control('ROLLBACK').promise.catch(() => undefined)
      await started.promise.catch(() => undefined)
      throw err
    }
    tx.close()
    await started.promise
    const commit = tx.control('COMMIT')
    let done: Result<unknown>
    try {
      done = await commit.promise
    } catch (err) {
      if (err instanceof ConnectionError && commit.wasSent) {
        throw new TransactionError(
          'PG_CONNECTION_CLOSED',
          'the connection was lost while COMMIT was in flight: the transaction may or may not have been committed',
          { cause: err },
        )
      }
      throw err
    }
    if (done.command === 'ROLLBACK') {
      throw new TransactionError('PG_TRANSACTION_ROLLED_BACK', 'the transaction was rolled back instead of committed, because a statement in it failed')
    }
    return result
  } finally {
    tx.close()
    host.release(token)
  }
}
