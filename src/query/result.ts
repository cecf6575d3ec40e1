import type { PgNotice } from '../errors.js'
import { splitCommandTag, type CommandTag, type FieldDescription } from '../protocol/backend.js'
import type { Columns, NullBitmaps } from '../types/columns.js'
import type { QueryTiming } from './timing.js'

/** A result column: a RowDescription field. */
export type Field = FieldDescription

export type Row = Record<string, unknown>

/**
 * 'object': rows keyed by column name; 'array': rows as arrays in column order;
 * 'lazy': rows whose columns decode when first read (see plainRow()).
 */
export type RowMode = 'object' | 'array' | 'lazy'

/** A query()'s row mode: also 'columns', the result as one array (mostly typed) per column. */
export type QueryRowMode = RowMode | 'columns'

/** The outcome of one statement. */
export interface Result<R = Row> {
  /** Rows as objects keyed by column name, as arrays with rowMode: 'array', or lazy rows with rowMode: 'lazy'. */
  rows: R[]
  /** Rows affected or returned, for commands that report a count (SELECT, INSERT, UPDATE, DELETE, MERGE, FETCH, MOVE, COPY); otherwise null. */
  rowCount: number | null
  /** The command, e.g. 'SELECT', 'INSERT', 'CREATE TABLE'; '' for an empty query string. */
  command: string
  fields: Field[]
  /**
   * The NoticeResponses the server raised while running this statement
   * (RAISE NOTICE, warnings), in order; empty (one shared, frozen array) when none.
   */
  notices: readonly PgNotice[]
  /** When the query was issued, written, answered and complete: see QueryTiming. */
  timing: QueryTiming
  /** With rowMode 'columns' (rows is then empty): the values by column name. */
  columns?: Columns
  /** With rowMode 'columns': which rows of each typed-array column are NULL (see NullBitmaps). */
  nulls?: NullBitmaps
}

/** The notices of a result that has none: shared, so results without notices cost nothing more. */
export const noNotices: readonly PgNotice[] = Object.freeze([])

/** Splits a CommandComplete tag ('INSERT 0 5', 'CREATE TABLE') into command and row count (see splitCommandTag). */
export function parseCommandTag(tag: string): Readonly<CommandTag> {
  if (tag === lastTag) return lastParsed
  lastParsed = splitCommandTag(tag)
  lastTag = tag
  return lastParsed
}

/** Pipelined statements mostly repeat the last tag: its split is kept, shared between results, so never changed. */
let lastTag = ''
let lastParsed: Readonly<CommandTag> = { command: '', rowCount: null }
