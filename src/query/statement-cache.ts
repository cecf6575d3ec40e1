import type { PgError } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import type { RowPlan } from '../types/row-plan.js'

export const enum StatementState {
  /** Parse has been written; its replies have not all arrived. */
  Parsing,
  /** Described: parameter types and result columns are known. */
  Ready,
  /** Parse failed or the server lost the statement; no longer in the cache. */
  Gone,
}

const noStatements: Statement[] = []

/** A named prepared statement on one connection. */
export class Statement {
  state = StatementState.Parsing
  /** Parameter type OIDs from ParameterDescription. */
  paramTypes: number[] | null = null
  /** Result columns; empty for a statement that returns no rows. */
  fields: FieldDescription[] | null = null
  /** Result formats to ask for once described, one per column (or empty: all text). */
  resultFormats: number[] = []
  /** Per-parameter formats once described. */
  paramFormats: number[] = []
  /** Plan for rows in resultFormats. */
  plan: RowPlan | null = null
  /** Plan for rows in text, for executions bound before the description arrived. */
  textPlan: RowPlan | null = null
  /** Requests written that still refer to this statement; it is not closed while any do. */
  users = 0
  /** Why Parse failed, reported to executions that were bound before the failure was known. */
  parseError: PgError | null = null

  constructor(
    readonly name: string,
    readonly text: string,
  ) {}
}

/**
 * Prepared statements of one connection, by query text, bounded: past the
 * capacity the least recently used statement that no request is using is
 * evicted (and the caller closes it on the server). A Map keeps insertion
 * order, so re-inserting on use makes its first key the least recently used.
 */
export class StatementCache {
  private readonly map = new Map<string, Statement>()
  private counter = 0
  /** The most recently used text: a hit on it needs no reordering (the common case of one hot query). */
  private lastText: string | undefined

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.map.size
  }

  get(text: string): Statement | undefined {
    const s = this.map.get(text)
    if (s !== undefined && text !== this.lastText) {
      this.map.delete(text)
      this.map.set(text, s)
      this.lastText = text
    }
    return s
  }

  /** A new statement for `text`, not yet in the cache. */
  create(text: string): Statement {
    return new Statement(`_p${++this.counter}`, text)
  }

  /** Statements evicted and not yet closed on the server. */
  private evicted: Statement[] = []

  /** Adds a statement, evicting the least recently used ones that are not in use if the cache is full. */
  insert(stmt: Statement): void {
    this.map.set(stmt.text, stmt)
    this.lastText = stmt.text
    if (this.map.size > this.capacity) this.trim()
  }

  /** A request that used `stmt` is done with it. Statements kept past the capacity because they were in use go now. */
  release(stmt: Statement): void {
    stmt.users--
    if (stmt.users === 0 && this.map.size > this.capacity) this.trim()
  }

  private trim(): void {
    for (const s of this.map.values()) {
      if (this.map.size <= this.capacity) break
      if (s.users > 0 || s.text === this.lastText) continue
      this.map.delete(s.text)
      s.state = StatementState.Gone
      this.evicted.push(s)
    }
  }

  /** Evicted statements to close on the server (with the next request written); empties the list. */
  takeEvicted(): Statement[] {
    if (this.evicted.length === 0) return noStatements
    const out = this.evicted
    this.evicted = []
    return out
  }

  /** Forgets a statement (if it is still the one cached for its text). */
  delete(stmt: Statement): void {
    if (this.map.get(stmt.text) === stmt) this.map.delete(stmt.text)
    if (this.lastText === stmt.text) this.lastText = undefined
    stmt.state = StatementState.Gone
  }

  /** Forgets every statement (after DISCARD ALL or DEALLOCATE ALL removed them on the server). */
  clear(): void {
    for (const s of this.map.values()) s.state = StatementState.Gone
    this.map.clear()
    this.lastText = undefined
  }
}
