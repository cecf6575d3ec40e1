// The usual exchanges of the extended protocol as script steps, so that a
// test reads as the conversation it checks: what the client sends for a query
// prepared the first time, bound again from the statement cache, or run as
// the unnamed statement, and the server's answers to each. Columns are text
// (OID 25) unless a test says otherwise: text is the same in both formats,
// so a reply does not depend on the formats the client asked for.

import { bindComplete, commandComplete, dataRow, errorResponse, noData, parameterDescription, parseComplete, readyForQuery, rowDescription, type Column } from './backend-messages.js'
import { expect, send, where, type FieldCheck, type Step } from './scripted-backend.js'

/** The name of a statement pipegres prepares: a per-process tag and a counter. */
export const STATEMENT_NAME = /^_p[0-9a-z]{6}_\d+$/

/** A field check for any such name. */
export const NAMED: FieldCheck = where<string>('a statement name', (v) => STATEMENT_NAME.test(v))

/**
 * A named statement's name, learned at its Parse and checked where it is used
 * again: `capture` matches any statement name and remembers it, `same` matches
 * only that name.
 */
export function statementName(): { capture: FieldCheck; same: FieldCheck; readonly value: string | null } {
  let value: string | null = null
  return {
    capture: where<string>('a new statement name', (v) => {
      if (!STATEMENT_NAME.test(v)) return false
      value = v
      return true
    }),
    same: where<string>('the same statement name', (v) => value !== null && v === value),
    get value() {
      return value
    },
  }
}

/** A query prepared for the first time: Parse and Describe of a named statement, then Bind, Execute, Sync. */
export function expectPrepared(sql: FieldCheck, opts: { name?: FieldCheck; params?: FieldCheck } = {}): Step[] {
  const name = opts.name ?? NAMED
  return [expect.parse({ name, sql }), expect.describe('S', name), expect.bind({ portal: '', statement: name, params: opts.params }), expect.execute({ portal: '', maxRows: 0 }), expect.sync()]
}

/** A query bound to a statement prepared before: Bind, Execute, Sync. */
export function expectBound(opts: { name?: FieldCheck; params?: FieldCheck } = {}): Step[] {
  return [expect.bind({ portal: '', statement: opts.name ?? NAMED, params: opts.params }), expect.execute({ portal: '', maxRows: 0 }), expect.sync()]
}

/** A query on the unnamed statement: Parse, Bind, Describe of the portal, Execute, Sync. */
export function expectUnnamed(sql: FieldCheck, opts: { params?: FieldCheck } = {}): Step[] {
  return [expect.parse({ name: '', sql }), expect.bind({ portal: '', statement: '', params: opts.params }), expect.describe('P', ''), expect.execute({ portal: '', maxRows: 0 }), expect.sync()]
}

type Rows = readonly (readonly (string | null)[])[]

function rowsAndTag(rows: Rows, tag: string | undefined): Uint8Array[] {
  return [...rows.map((r) => dataRow(r)), commandComplete(tag ?? `SELECT ${rows.length}`)]
}

/** How a reply ends: the transaction status of its ReadyForQuery. */
interface ReplyOptions {
  tag?: string
  status?: 'I' | 'T' | 'E'
  /** The statement's parameter types (ParameterDescription), text by default. */
  paramTypes?: readonly number[]
}

/** The answer to expectPrepared: the statement described, then its rows. `columns` empty: a statement without rows (NoData). */
export function replyPrepared(columns: readonly Column[], rows: Rows = [], opts: ReplyOptions = {}): Step {
  const paramTypes = opts.paramTypes ?? []
  return send(
    parseComplete(),
    parameterDescription(paramTypes),
    columns.length > 0 ? rowDescription(columns) : noData(),
    bindComplete(),
    ...rowsAndTag(rows, opts.tag),
    readyForQuery(opts.status),
  )
}

/** The answer to expectBound. */
export function replyBound(rows: Rows = [], opts: ReplyOptions = {}): Step {
  return send(bindComplete(), ...rowsAndTag(rows, opts.tag), readyForQuery(opts.status))
}

/** The answer to expectUnnamed. */
export function replyUnnamed(columns: readonly Column[], rows: Rows = [], opts: ReplyOptions = {}): Step {
  return send(parseComplete(), bindComplete(), columns.length > 0 ? rowDescription(columns) : noData(), ...rowsAndTag(rows, opts.tag), readyForQuery(opts.status))
}

/** An ErrorResponse's fields for a plain ERROR. */
export function pgError(code: string, message: string): Record<string, string> {
  return { S: 'ERROR', V: 'ERROR', C: code, M: message }
}

/** An error, and the ReadyForQuery of the Sync the server skipped to. */
export function replyError(code: string, message: string, status: 'I' | 'T' | 'E' = 'I', ...before: Uint8Array[]): Step {
  return send(...before, errorResponse(pgError(code, message)), readyForQuery(status))
}

/** A simple-protocol statement's answer without its ReadyForQuery: rows (if columns are given) and the tag. */
export function simpleResult(tag: string, columns: readonly Column[] = [], rows: Rows = []): Uint8Array[] {
  return [...(columns.length > 0 ? [rowDescription(columns)] : []), ...rows.map((r) => dataRow(r)), commandComplete(tag)]
}
