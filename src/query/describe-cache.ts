import type { FieldDescription } from '../protocol/backend.js'
import { CodecError } from '../types/codec.js'
import type { RowPlan } from '../types/row-plan.js'
import type { TypeCatalog } from '../types/catalog.js'
import type { TypeView } from '../types/view.js'
import { cacheableText, statementKey } from './statement-cache.js'

/** One result-format code for every column: binary (a single code applies to all). */
export const allBinary: number[] = [1]
const noFormats: number[] = []

/** Texts remembered per connection: enough for an application's queries, bounded for one that makes texts up. */
const CAPACITY = 256

interface Learned {
  /** The catalog version and type view the columns were judged under. */
  readonly version: number
  readonly view: TypeView
}

/**
 * Binary results without prepared statements (what pgx calls caching the
 * describe). An unnamed statement is parsed with every execution and bound
 * before the server has described its result, so the Bind asks for text. Once
 * one execution has shown that every result column of a text decodes in
 * binary, later executions of that text ask for binary, still in one round
 * trip.
 *
 * They ask with a single format code, which covers any number of columns: a
 * schema change since then cannot make the Bind fail (inside a transaction,
 * that would abort it). The rows are decoded by the portal's own
 * RowDescription, which an unnamed statement always requests, so by what the
 * server sent and not by what was remembered. Only a column that changed to a
 * type read in text cannot be read: see binaryPlan().
 *
 * Texts are remembered by the statement cache's key (text and declared
 * types), and only texts short enough to be cached as statements.
 */
export class DescribeCache {
  private readonly texts = new Map<string, Learned>()

  /** The result formats to bind the text with: binary for all columns when they were seen to allow it under this version and view. */
  formats(text: string, declared: readonly number[] | null, version: number, view: TypeView): number[] | null {
    if (!cacheableText(text)) return null
    const learned = this.texts.get(statementKey(text, declared))
    return learned !== undefined && learned.version === version && learned.view === view ? allBinary : null
  }

  /**
   * A text result of the text arrived in these columns: remembered when every
   * column decodes in binary (and is of a type the catalog knows), forgotten otherwise.
   */
  learn(text: string, declared: readonly number[] | null, fields: readonly FieldDescription[], version: number, view: TypeView): void {
    if (!cacheableText(text)) return
    const key = statementKey(text, declared)
    if (fields.length === 0 || !fields.every((f) => view.resultFormat(f.typeOid) === 1)) {
      this.texts.delete(key)
      return
    }
    if (this.texts.size >= CAPACITY && !this.texts.has(key)) this.texts.delete(this.texts.keys().next().value!)
    this.texts.set(key, { version, view })
  }

  forget(text: string, declared: readonly number[] | null): void {
    if (cacheableText(text)) this.texts.delete(statementKey(text, declared))
  }
}

/**
 * The decode plan of an unnamed statement's rows, in the formats it was bound
 * with; on a text result, what the cache learns from it. Throws CodecError
 * when a column bound in binary is of a type read in text (see binaryPlan).
 */
export function unnamedPlan(cache: DescribeCache, text: string, declared: readonly number[] | null, fields: readonly FieldDescription[], formats: number[], catalog: TypeCatalog, view: TypeView): RowPlan {
  if (formats.length === 0) {
    cache.learn(text, declared, fields, catalog.version, view)
    return view.plan(fields, formats)
  }
  if (!fields.every((f) => catalog.knows(f.typeOid))) {
    // A column changed to a type met for the first time: its rows wait as
    // bytes for the lookup, and are then planned by binaryPlan.
    cache.forget(text, declared)
    return view.plan(fields, noFormats)
  }
  try {
    return binaryPlan(fields, view)
  } catch (err) {
    cache.forget(text, declared)
    throw err
  }
}

/**
 * The plan of rows that came back in binary for every column. A column of a
 * type read in text (an OID alias is a name in text and a number in binary,
 * a type without a codec a string in text and bytes in binary) would give a
 * different value than the same query prepared: the query fails instead. It
 * can only happen when the column changed type after the text was remembered:
 * the statement has run, and its next execution asks for text again.
 */
export function binaryPlan(fields: readonly FieldDescription[], view: TypeView): RowPlan {
  const textual = fields.find((f) => view.resultFormat(f.typeOid) !== 1)
  if (textual === undefined) return view.plan(fields, allBinary)
  throw new CodecError(
    `the statement ran, but its result cannot be read: column "${textual.name}" is now of type ${view.typeName(textual.typeOid)}, which is read in text, and the result was asked for in binary because the column was of another type when this query last ran without a prepared statement; run it again (it asks for text from now on)`,
  )
}
