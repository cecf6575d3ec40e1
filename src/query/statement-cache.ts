import type { PgError } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { writeClose, writeSync } from '../protocol/frontend.js'
import { Codes } from '../protocol/sql-state-codes.js'
import type { Writer } from '../protocol/writer.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { RowPlan } from '../types/row-plan.js'
import type { TypeView } from '../types/view.js'
import { Step } from './step.js'

export const enum StatementState {
  /** Parse has been written; its replies have not all arrived. */
  Parsing,
  /** Described: parameter types and result columns are known. */
  Ready,
  /** Parse failed or the server lost the statement; no longer in the cache. */
  Gone,
}

const noStatements: Statement[] = []

/**
 * Statement names are unique to this process, not just to one connection.
 * Behind a transaction-mode pooler (PgBouncer, Supavisor, RDS Proxy) a server
 * connection is shared by many clients: with names like `_p1` everywhere, one
 * client's Bind could find another client's statement of the same name and run
 * a different query with its parameters. The random tag keeps processes apart.
 */
const processTag = Math.floor(Math.random() * 36 ** 6).toString(36).padStart(6, '0')
let statementCounter = 0

/**
 * Query texts longer than this (in UTF-16 units) are not worth preparing: a
 * cached statement keeps its text alive, as the cache key, for as long as it
 * stays cached, and a text that size is rarely run twice. They run as the
 * unnamed statement instead.
 */
export const MAX_CACHED_TEXT = 1024 * 1024

/** True when a query text may be kept as a prepared statement's key. */
export function cacheableText(text: string): boolean {
  return text.length <= MAX_CACHED_TEXT
}

/** How rows of a statement are requested and decoded through one type view, as of one catalog version. */
export interface Shape {
  readonly version: number
  /** Result formats for Bind: empty when every column is text. */
  readonly resultFormats: number[]
  /** Decodes rows in resultFormats. */
  readonly plan: RowPlan
  /** Decodes rows requested all in text (executions bound before the description was known). */
  readonly textPlan: RowPlan
  /** Column and parameter types the catalog did not know when this shape was made. */
  readonly unknown: readonly number[]
}

/** A named prepared statement on one connection. */
export class Statement {
  state = StatementState.Parsing
  /** Parameter type OIDs from ParameterDescription. */
  paramTypes: number[] | null = null
  /** Result columns; empty for a statement that returns no rows. */
  fields: FieldDescription[] | null = null
  /** Requests written that still refer to this statement; it is not closed while any do. */
  users = 0
  /** Why Parse failed, reported to executions that were bound before the failure was known. */
  parseError: PgError | null = null
  /** The transaction (its token) this statement was prepared in, if any: see StatementCache.find. */
  preparedIn: object | null = null
  // The shape for the view used last (nearly always the client's own), and any others.
  private shapeView: TypeView | null = null
  private lastShape: Shape | null = null
  private otherShapes: Map<TypeView, Shape> | null = null

  constructor(
    readonly name: string,
    /** The cache key: the text, plus the explicit parameter types if any. */
    readonly key: string,
    readonly text: string,
    /** Parameter types given in Parse (0 where the server infers them). */
    readonly declaredTypes: readonly number[],
  ) {}

  /** The shape of this described statement for `view`, rebuilt when the catalog has learned something since. */
  shape(view: TypeView, catalog: TypeCatalog): Shape {
    let shape = this.shapeView === view ? this.lastShape : (this.otherShapes?.get(view) ?? null)
    if (shape === null || shape.version !== catalog.version) {
      shape = makeShape(this.fields!, this.paramTypes ?? [], view, catalog)
      if (this.shapeView === null || this.shapeView === view) {
        this.shapeView = view
        this.lastShape = shape
      } else {
        ;(this.otherShapes ??= new Map()).set(view, shape)
      }
    }
    return shape
  }
}

export function makeShape(fields: readonly FieldDescription[], paramTypes: readonly number[], view: TypeView, catalog: TypeCatalog): Shape {
  const unknown: number[] = []
  for (const f of fields) if (!catalog.knows(f.typeOid)) unknown.push(f.typeOid)
  for (const oid of paramTypes) if (!catalog.knows(oid)) unknown.push(oid)
  const resultFormats = view.resultFormats(fields)
  const textPlan = view.plan(fields, [])
  return {
    version: catalog.version,
    resultFormats,
    plan: resultFormats.length === 0 ? textPlan : view.plan(fields, resultFormats),
    textPlan,
    unknown,
  }
}

/**
 * Prepared statements of one connection, by query text, bounded: past the
 * capacity the least recently used statement that no request is using is
 * evicted (and the caller closes it on the server). A Map keeps insertion
 * order, so re-inserting on use makes its first key the least recently used.
 */
export class StatementCache {
  private readonly map = new Map<string, Statement>()
  /** The most recently used text: a hit on it needs no reordering (the common case of one hot query). */
  private lastKey: string | undefined

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.map.size
  }

  /**
   * The cached statement for a query's text and typed() parameter types, if
   * any. `tx` is the transaction the query runs in: until the connection is
   * known to reach the server directly, a statement prepared before this
   * transaction may live on another server connection of a pooler, where
   * binding it could fail with 26000, and inside a transaction that aborts
   * everything. It is prepared again within this one.
   */
  find(key: string, tx: object | null, direct: boolean): Statement | undefined {
    const stmt = this.get(key)
    if (stmt !== undefined && tx !== null && stmt.preparedIn !== tx && !direct) {
      this.retire(stmt)
      return undefined
    }
    return stmt
  }

  /**
   * Closes evicted statements behind the request being written, each with its
   * own Sync so that a failure there concerns nobody; returns how many.
   */
  writeEvictedCloses(w: Writer): number {
    if (this.evicted.length === 0) return 0
    const closing = this.takeEvicted()
    for (const old of closing) {
      writeClose(w, 'S', old.name)
      writeSync(w)
    }
    return closing.length
  }

  get(key: string): Statement | undefined {
    const s = this.map.get(key)
    if (s !== undefined && key !== this.lastKey) {
      this.map.delete(key)
      this.map.set(key, s)
      this.lastKey = key
    }
    return s
  }

  /** A new statement, not yet in the cache. */
  create(key: string, text: string, declaredTypes: readonly number[]): Statement {
    return new Statement(`_p${processTag}_${++statementCounter}`, key, text, declaredTypes)
  }

  /** Statements evicted and not yet closed on the server. */
  private evicted: Statement[] = []

  /** Adds a statement, evicting the least recently used ones that are not in use if the cache is full. */
  insert(stmt: Statement): void {
    this.map.set(stmt.key, stmt)
    this.lastKey = stmt.key
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
      if (s.users > 0 || s.key === this.lastKey) continue
      this.map.delete(s.key)
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
    if (this.map.get(stmt.key) === stmt) this.map.delete(stmt.key)
    if (this.lastKey === stmt.key) this.lastKey = undefined
    stmt.state = StatementState.Gone
  }

  /** Forgets `stmt` and closes it on the server behind the next request; requests already written with it come before that Close. */
  retire(stmt: Statement): void {
    this.delete(stmt)
    this.evicted.push(stmt)
  }

  /** Forgets every statement (after DISCARD ALL or DEALLOCATE ALL removed them on the server). */
  clear(): void {
    for (const s of this.map.values()) s.state = StatementState.Gone
    this.map.clear()
    this.lastKey = undefined
  }
}

/** The cache key of a query: its text, plus the parameter types given with typed(). */
export function statementKey(text: string, declared: readonly number[] | null): string {
  return declared === null ? text : `${text}\0${declared.join(',')}`
}

/** What an ErrorResponse means for the named statement a request used. */
export const enum StatementFault {
  None,
  /** The server lost the statement (or had one of its name) before anything ran: the query may be sent again. */
  Lost,
  /** The statement's own Parse failed earlier: that error, not "does not exist", is the one to report. */
  ParseFailed,
}

/**
 * Updates the cache after an ErrorResponse to a request that used `stmt`,
 * received at `step` of its exchange; `parsing` when that request wrote the
 * statement's Parse. `cache` is null once the connection stopped caching.
 */
export function statementFailed(cache: StatementCache | null, stmt: Statement, err: PgError, parsing: boolean, step: Step): StatementFault {
  const code = err.code
  if (parsing && step === Step.Parse && code === Codes.DuplicatePreparedStatement) {
    // Our Parse met a statement of the same name on the server: not ours,
    // since names are unique to this process. The server skips to the Sync,
    // so nothing ran.
    cache?.delete(stmt)
    return StatementFault.Lost
  }
  if (parsing && (step === Step.Parse || step === Step.ParamDesc || step === Step.StmtDesc)) {
    // The statement does not exist on the server: forget it, and let later
    // executions bound to it report this error instead of "does not exist".
    stmt.parseError = err
    cache?.delete(stmt)
    return StatementFault.None
  }
  if (code === Codes.InvalidSqlStatementName && stmt.parseError !== null) return StatementFault.ParseFailed
  if (code === Codes.InvalidSqlStatementName && (step === Step.Bind || step === Step.ParamDesc)) {
    // Prepared by an earlier Sync, gone now: DEALLOCATE, or a pooler that gave
    // this Sync another server connection. Bind (or Describe) failed, so the
    // query never ran and can be sent again.
    cache?.delete(stmt)
    return StatementFault.Lost
  }
  if (code === Codes.InvalidSqlStatementName || (code === Codes.FeatureNotSupported && /cached plan/.test(err.message))) {
    // The server lost the statement (DEALLOCATE) or its result type changed
    // under it: prepare it afresh next time.
    cache?.delete(stmt)
  }
  return StatementFault.None
}
