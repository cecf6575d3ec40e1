import type { TypeCatalog } from '../types/catalog.js'
import type { TypeView } from '../types/view.js'
import { BinaryCopyDecoder, BinaryCopyEncoder } from './binary-format.js'
import { CsvCopyDecoder, CsvCopyEncoder } from './csv-format.js'
import type { CopyDecoder, CopyEncoder } from './incremental.js'
import { resolveCopyOptions, type CopyFormatOptions } from './options.js'
import type { CopyColumn } from './rows.js'
import { TextCopyDecoder, TextCopyEncoder } from './text-format.js'

// The COPY data layer: pure functions of rows and bytes, no sockets. The
// connection wraps what the encoders write in CopyData messages and feeds the
// payloads of the ones it receives to the decoders.

export type { CopyDecoder, CopyEncoder } from './incremental.js'
export type { CopyFormat, CopyFormatOptions, ResolvedCopyOptions } from './options.js'
export { resolveCopyOptions } from './options.js'
export { CopyRowError, type CopyColumn, type CopyRow } from './rows.js'
export { checkTableName, copyFromStatement, copyQueryBody, copyToStatement, quoteColumnName } from './statement.js'
export { BinaryCopyDecoder, BinaryCopyEncoder } from './binary-format.js'
export { CsvCopyDecoder, CsvCopyEncoder } from './csv-format.js'
export { TextCopyDecoder, TextCopyEncoder } from './text-format.js'

/**
 * An encoder of rows for COPY ... FROM STDIN with these columns, in the format
 * of `options` (binary by default; ArgumentError for a bad option). The
 * catalog supplies the codecs; the columns are in the order of the statement's
 * column list.
 */
export function createCopyEncoder(columns: readonly CopyColumn[], catalog: TypeCatalog, options?: CopyFormatOptions): CopyEncoder {
  const o = resolveCopyOptions(options, 'binary')
  switch (o.format) {
    case 'binary':
      return new BinaryCopyEncoder(columns, catalog)
    case 'text':
      return new TextCopyEncoder(columns, catalog, o)
    case 'csv':
      return new CsvCopyEncoder(columns, catalog, o)
  }
}

export interface CopyDecoderOptions extends CopyFormatOptions {
  /** Rows as objects keyed by column name (default) or as arrays. */
  rowMode?: 'array' | 'object'
}

/**
 * A decoder of the data of COPY ... TO STDOUT whose columns are these (as the
 * query describes them), decoding values through `view`, so with its type
 * options. Binary by default; ArgumentError for a bad option, or, in binary,
 * for a column whose type has no binary decoder. Text and CSV values are read
 * as a pipegres connection's session prints them (DateStyle ISO, UTF-8).
 */
export function createCopyDecoder(columns: readonly CopyColumn[], view: TypeView, options?: CopyDecoderOptions): CopyDecoder {
  const o = resolveCopyOptions(options, 'binary')
  const mode = options?.rowMode ?? 'object'
  switch (o.format) {
    case 'binary':
      return new BinaryCopyDecoder(columns, view, mode)
    case 'text':
      return new TextCopyDecoder(columns, view, o, mode)
    case 'csv':
      return new CsvCopyDecoder(columns, view, o, mode)
  }
}
