import type { Client, Pool, ReservedClient, Transaction, TransactionOptions } from '../../index.js'

/** What a dialect runs on: a pool, a client, or a connection reserved from a pool. */
export type PipegresTarget = Pool | Client | ReservedClient

/** Rejects the transaction function when the caller asked for a rollback; never seen outside. */
const ROLLBACK = Symbol('rollback requested')

/**
 * A transaction opened with begin() whose end is decided later, by commit() or
 * rollback(), as query builders drive transactions (begin, queries, commit as
 * separate calls). pipegres's begin() keeps the connection to the transaction
 * and reports a COMMIT answered with ROLLBACK as a TransactionError.
 */
export class OpenTransaction {
  private settled = false

  private constructor(
    readonly tx: Transaction,
    private readonly finish: (commit: boolean) => void,
    private readonly done: Promise<unknown>,
  ) {}

  static open(target: PipegresTarget, options: TransactionOptions): Promise<OpenTransaction> {
    return new Promise((resolve, reject) => {
      let finish!: (commit: boolean) => void
      const gate = new Promise<void>((res, rej) => {
        finish = (commit) => (commit ? res() : rej(ROLLBACK))
      })
      let opened: OpenTransaction | null = null
      const done = target.begin(options, (tx) => {
        opened = new OpenTransaction(tx, finish, done)
        resolve(opened)
        return gate
      })
      // Before the function ran (no connection, bad options) this is the only
      // place the failure is seen; afterwards commit() or rollback() reports it.
      done.catch((err: unknown) => {
        if (opened === null) reject(err)
      })
    })
  }

  /** Sends COMMIT; rejects as begin() does (TransactionError when the server rolled back). */
  async commit(): Promise<void> {
    if (this.settled) return
    this.settled = true
    this.finish(true)
    await this.done
  }

  /** Sends ROLLBACK; rejects only when something other than the rollback went wrong (BEGIN failed, say). */
  async rollback(): Promise<void> {
    if (this.settled) return
    this.settled = true
    this.finish(false)
    try {
      await this.done
    } catch (err) {
      if (err !== ROLLBACK) throw err
    }
  }

  get over(): boolean {
    return this.settled
  }
}
