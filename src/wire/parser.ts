import { Backend } from '../protocol/message-codes.js'
import { readInt16, readInt32, readUint32 } from '../types/codecs/binary.js'
import { findNul, utf8Text } from './bytes.js'
import { ErrorFieldsReader } from '../errors.js'
import { WireProtocolError, WireServerError, type WireNotice } from './errors.js'
import { copyBytes, resolveTypeOptions, type ScalarType, type WireTypeOptions } from './scalars.js'
import { typeTable } from './types.js'

// An incremental parser of the messages PostgreSQL sends for query results:
// RowDescription, DataRow, CommandComplete, EmptyQueryResponse, ErrorResponse
// and NoticeResponse, one after another for any number of queries. Chunks may
// split the stream anywhere. Anything else (another message type, a length
// that does not add up, a row that does not match its description, a value
// its type cannot have) stops the parser with a WireProtocolError: a stream
// that is not what it should be is never decoded into rows by guesswork.

/** One column of a RowDescription. */
export interface WireField {
  name: string
  /** OID of the table the column comes from, or 0. */
  tableOid: number
  /** Attribute number of the column in that table, or 0. */
  columnNumber: number
  typeOid: number
  /** pg_type.typlen: negative for variable-length types. */
  typeSize: number
  /** pg_attribute.atttypmod: type-specific, -1 when none. */
  typeModifier: number
  /** 0 when the values are in text, 1 in binary. */
  format: number
}

export type RowMode = 'object' | 'array'

/** A row as an object keyed by column name (a later column of the same name wins), or an array with rowMode 'array'. */
export type RowOf<M extends RowMode> = M extends 'array' ? unknown[] : Record<string, unknown>

/** The end of one statement's result. */
export interface WireCompletion {
  /** The CommandComplete tag: 'SELECT 3', 'INSERT 0 1', 'CREATE TABLE'; '' for an empty query. */
  tag: string
  /** The tag's command: 'SELECT', 'INSERT', 'CREATE TABLE'; '' for an empty query. */
  command: string
  /** The tag's row count for SELECT, INSERT, UPDATE, DELETE, MERGE, FETCH, MOVE and COPY; otherwise null. */
  rowCount: number | null
  /** True for an EmptyQueryResponse (the query string held no statement). */
  empty: boolean
}

export type WireEvent<R = Record<string, unknown>> =
  | { type: 'fields'; fields: WireField[] }
  | { type: 'row'; row: R }
  | ({ type: 'complete' } & WireCompletion)
  | { type: 'error'; error: WireServerError }
  | { type: 'notice'; notice: WireNotice }

export interface WireParserOptions<M extends RowMode = 'object'> {
  /** 'object' (default) or 'array'. */
  rowMode?: M
  /** How int8, numeric, date and timestamps are represented. */
  types?: WireTypeOptions
  /** Largest message accepted, in bytes including its 4 length bytes; default 1 GiB + 64 KiB, the Node client's default. */
  maxMessageSize?: number
  /** A result's columns, before its first row. */
  onFields?: (fields: WireField[]) => void
  onRow?: (row: RowOf<M>, fields: WireField[]) => void
  /** A statement finished (CommandComplete or EmptyQueryResponse). */
  onComplete?: (completion: WireCompletion) => void
  /** A statement failed on the server (ErrorResponse); the stream may go on with the next statement's result. */
  onError?: (error: WireServerError) => void
  onNotice?: (notice: WireNotice) => void
}

const DEFAULT_MAX_MESSAGE_SIZE = 1024 * 1024 * 1024 + 64 * 1024

// Message types (the first byte of every message), as the protocol layer names them.
const ROW_DESCRIPTION = Backend.RowDescription
const DATA_ROW = Backend.DataRow
const COMMAND_COMPLETE = Backend.CommandComplete
const EMPTY_QUERY = Backend.EmptyQueryResponse
const ERROR_RESPONSE = Backend.ErrorResponse
const NOTICE_RESPONSE = Backend.NoticeResponse

const RESULT_MESSAGE_NAMES: Record<number, string> = {
  [ROW_DESCRIPTION]: 'a RowDescription',
  [DATA_ROW]: 'a DataRow',
  [COMMAND_COMPLETE]: 'a CommandComplete',
  [EMPTY_QUERY]: 'an EmptyQueryResponse',
  [ERROR_RESPONSE]: 'an ErrorResponse',
  [NOTICE_RESPONSE]: 'a NoticeResponse',
}

/** Every backend message by type byte, so that an error can say what arrived where a result was expected. */
const BACKEND_MESSAGES = new Map<number, string>(Object.entries(Backend).map(([name, type]) => [type, name]))

function describeType(type: number): string {
  const ch = String.fromCharCode(type)
  const hex = '0x' + type.toString(16).padStart(2, '0')
  const name = BACKEND_MESSAGES.get(type)
  if (name !== undefined) return `${name} ('${ch}', ${hex})`
  return type >= 0x20 && type < 0x7f ? `unknown message type '${ch}' (${hex})` : `unknown message type ${hex}`
}

const COUNTED = new Set(['SELECT', 'UPDATE', 'DELETE', 'MERGE', 'FETCH', 'MOVE', 'COPY'])

/** Splits a CommandComplete tag into its command and row count. */
export function parseCommandTag(tag: string): { command: string; rowCount: number | null } {
  const words = tag.split(' ')
  // INSERT's tag is 'INSERT oid rows'; the others that count end in their count.
  const counted = (words[0] === 'INSERT' && words.length === 3) || (COUNTED.has(words[0]!) && words.length === 2)
  const last = words[words.length - 1]!
  if (counted && /^\d+$/.test(last)) return { command: words[0]!, rowCount: Number(last) }
  return { command: tag, rowCount: null }
}

type ValueDecoder = (b: Uint8Array, start: number, end: number) => unknown

const utf8Value: ValueDecoder = (b, s, e) => utf8Text(b, s, e)

/** The first buffer for a message split across chunks; bigger ones grow as their bytes arrive. */
const INITIAL_BODY = 64 * 1024

/**
 * Parses result messages incrementally. push() each chunk as it arrives; it
 * returns the events parsed from that chunk and calls the matching callbacks
 * first. end() when the stream is over. A malformed stream throws a
 * WireProtocolError from push() or end(), and the parser refuses further input.
 */
export class WireParser<M extends RowMode = 'object'> {
  private readonly options: WireParserOptions<M>
  private readonly types: Map<number, ScalarType>
  private readonly arrays: boolean
  private readonly maxMessageSize: number

  // Framing: the 5 header bytes (type, length) and the body of a message split across chunks.
  private readonly header = new Uint8Array(5)
  private headerFill = 0
  private body: Uint8Array | null = null
  private bodyFill = 0
  private bodyType = 0
  /** The body's length as its header claims; `body` grows towards it as bytes arrive. */
  private bodySize = 0

  // The result being received: its columns, after a RowDescription and until its end.
  private current: WireField[] | null = null
  private decoders: ValueDecoder[] = []
  private rowsInResult = 0

  private failure: Error | null = null
  private ended = false

  constructor(options: WireParserOptions<M> = {}) {
    this.options = options
    if (options.rowMode !== undefined && options.rowMode !== 'object' && options.rowMode !== 'array') {
      throw new TypeError("rowMode must be 'object' or 'array'")
    }
    this.arrays = options.rowMode === 'array'
    this.types = typeTable(resolveTypeOptions(options.types))
    const max = options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE
    if (!Number.isInteger(max) || max < 5) throw new TypeError('maxMessageSize must be an integer of at least 5')
    this.maxMessageSize = max
  }

  /** The columns of the result being received, or null between results. */
  get fields(): readonly WireField[] | null {
    return this.current
  }

  /** Parses a chunk of the stream; returns the events it completed, in order. */
  push(chunk: Uint8Array): WireEvent<RowOf<M>>[] {
    this.checkUsable('push')
    if (!(chunk instanceof Uint8Array)) throw new TypeError('push() takes a Uint8Array')
    const events: WireEvent<RowOf<M>>[] = []
    try {
      this.consume(chunk, events)
    } catch (err) {
      // The chunk was consumed only up to the failure: the stream cannot be resumed.
      this.failure = err instanceof Error ? err : new Error(String(err))
      throw err
    }
    return events
  }

  /** Declares the stream over; throws a WireProtocolError if it stopped inside a message or inside a result. */
  end(): void {
    this.checkUsable('end')
    this.ended = true
    if (this.body !== null) {
      throw this.fail(`the stream ended inside ${this.messageName(this.bodyType)}: ${this.bodyFill + 5} of its ${this.bodySize + 5} bytes arrived`)
    }
    if (this.headerFill > 0) throw this.fail(`the stream ended inside a message header (${this.headerFill} of 5 bytes)`)
    if (this.current !== null) {
      throw this.fail(`the stream ended inside a result: a RowDescription and ${this.rowsInResult} rows, but no CommandComplete or ErrorResponse`)
    }
  }

  private checkUsable(what: string): void {
    if (this.failure !== null) throw new WireProtocolError(`${what}() after the parser stopped: ${this.failure.message}`, { cause: this.failure })
    if (this.ended) throw new WireProtocolError(`${what}() after end()`)
  }

  private fail(message: string): WireProtocolError {
    const err = new WireProtocolError(message)
    this.failure = err
    return err
  }

  private messageName(type: number): string {
    return RESULT_MESSAGE_NAMES[type] ?? describeType(type)
  }

  /** Checks a header; returns the body length. */
  private checkHeader(type: number, length: number): number {
    if (type !== ROW_DESCRIPTION && type !== DATA_ROW && type !== COMMAND_COMPLETE && type !== EMPTY_QUERY && type !== ERROR_RESPONSE && type !== NOTICE_RESPONSE) {
      throw new WireProtocolError(`${describeType(type)} where a query result was expected`)
    }
    // The length counts itself; a negative int32 (top bit set) fails here too.
    if (length < 4) throw new WireProtocolError(`${this.messageName(type)} with invalid length ${length}`)
    if (length > this.maxMessageSize) {
      throw new WireProtocolError(`${this.messageName(type)} of ${length} bytes, more than maxMessageSize (${this.maxMessageSize})`)
    }
    if (type === EMPTY_QUERY && length !== 4) throw new WireProtocolError(`an EmptyQueryResponse of length ${length}; it must be 4`)
    return length - 4
  }

  private consume(chunk: Uint8Array, events: WireEvent<RowOf<M>>[]): void {
    const n = chunk.length
    let pos = 0
    while (pos < n) {
      if (this.body !== null) {
        const take = Math.min(this.bodySize - this.bodyFill, n - pos)
        if (this.bodyFill + take > this.body.length) this.growBody(this.bodyFill + take)
        this.body.set(chunk.subarray(pos, pos + take), this.bodyFill)
        this.bodyFill += take
        pos += take
        if (this.bodyFill < this.bodySize) return
        const body = this.body
        this.body = null
        this.handle(this.bodyType, body, 0, body.length, events)
        continue
      }
      let type: number
      let length: number
      if (this.headerFill === 0 && n - pos >= 5) {
        type = chunk[pos]!
        length = readInt32(chunk, pos + 1)
        pos += 5
      } else {
        const take = Math.min(5 - this.headerFill, n - pos)
        this.header.set(chunk.subarray(pos, pos + take), this.headerFill)
        this.headerFill += take
        pos += take
        // The type alone is enough to refuse a message that has no place here.
        if (this.headerFill < 5) {
          this.checkHeader(this.header[0]!, 4)
          return
        }
        this.headerFill = 0
        type = this.header[0]!
        length = readInt32(this.header, 1)
      }
      const size = this.checkHeader(type, length)
      if (n - pos >= size) {
        // The whole body is in this chunk: decode it in place.
        this.handle(type, chunk, pos, pos + size, events)
        pos += size
      } else {
        // A header may claim up to maxMessageSize: memory follows the bytes
        // that actually arrive, not the claim.
        this.body = new Uint8Array(Math.min(size, INITIAL_BODY))
        this.bodySize = size
        this.bodyFill = 0
        this.bodyType = type
      }
    }
  }

  private growBody(need: number): void {
    const next = new Uint8Array(Math.min(this.bodySize, Math.max(need, this.body!.length * 4)))
    next.set(this.body!.subarray(0, this.bodyFill), 0)
    this.body = next
  }

  private handle(type: number, b: Uint8Array, s: number, e: number, events: WireEvent<RowOf<M>>[]): void {
    switch (type) {
      case DATA_ROW: {
        if (this.current === null) throw new WireProtocolError('a DataRow outside a result (no RowDescription before it)')
        const row = this.decodeRow(b, s, e, this.current)
        this.rowsInResult++
        events.push({ type: 'row', row })
        this.options.onRow?.(row, this.current)
        return
      }
      case ROW_DESCRIPTION: {
        if (this.current !== null) throw new WireProtocolError('a RowDescription inside a result that has not ended')
        const fields = this.decodeFields(b, s, e)
        this.current = fields
        this.rowsInResult = 0
        events.push({ type: 'fields', fields })
        this.options.onFields?.(fields)
        return
      }
      case COMMAND_COMPLETE: {
        // Not protocol/'s decodeCommandComplete, which reads the tag leniently and fails with one generic message.
        const end = findNul(b, s, e)
        if (end !== e - 1) throw new WireProtocolError('a CommandComplete whose tag is not one NUL-terminated string')
        const tag = utf8Text(b, s, end)
        this.current = null
        const completion: WireCompletion = { tag, ...parseCommandTag(tag), empty: false }
        events.push({ type: 'complete', ...completion })
        this.options.onComplete?.(completion)
        return
      }
      case EMPTY_QUERY: {
        if (this.current !== null) throw new WireProtocolError('an EmptyQueryResponse inside a result')
        const completion: WireCompletion = { tag: '', command: '', rowCount: null, empty: true }
        events.push({ type: 'complete', ...completion })
        this.options.onComplete?.(completion)
        return
      }
      case ERROR_RESPONSE: {
        const error = new WireServerError(this.decodeNoticeFields(b, s, e, 'an ErrorResponse', 'ERROR'))
        this.current = null
        events.push({ type: 'error', error })
        this.options.onError?.(error)
        return
      }
      default: {
        const notice = this.decodeNoticeFields(b, s, e, 'a NoticeResponse', 'NOTICE')
        events.push({ type: 'notice', notice })
        this.options.onNotice?.(notice)
      }
    }
  }

  // Not protocol/'s decodeRowDescription: that one reads names leniently (bad
  // UTF-8 becomes U+FFFD) and fails with one message for any fault, where wire
  // refuses bad UTF-8, names the column at fault, and picks each column's
  // decoder in the same pass.
  private decodeFields(b: Uint8Array, s: number, e: number): WireField[] {
    if (e - s < 2) throw new WireProtocolError('a RowDescription shorter than its column count')
    const count = readInt16(b, s)
    if (count < 0) throw new WireProtocolError(`a RowDescription with ${count} columns`)
    let p = s + 2
    const fields: WireField[] = []
    const decoders: ValueDecoder[] = []
    for (let i = 0; i < count; i++) {
      const nul = findNul(b, p, e)
      if (nul < 0 || e - (nul + 1) < 18) throw new WireProtocolError(`a RowDescription truncated in column ${i + 1} of ${count}`)
      const field: WireField = {
        name: utf8Text(b, p, nul),
        tableOid: readUint32(b, nul + 1),
        columnNumber: readInt16(b, nul + 5),
        typeOid: readUint32(b, nul + 7),
        typeSize: readInt16(b, nul + 11),
        typeModifier: readInt32(b, nul + 13),
        format: readInt16(b, nul + 17),
      }
      p = nul + 19
      if (field.format !== 0 && field.format !== 1) throw new WireProtocolError(`column "${field.name}" has format code ${field.format}; only 0 (text) and 1 (binary) exist`)
      const t = this.types.get(field.typeOid)
      if (field.format === 0) {
        const text = t?.text
        decoders.push(text === undefined ? utf8Value : (b2, s2, e2) => text(utf8Text(b2, s2, e2)))
      } else {
        decoders.push(t?.binary ?? copyBytes)
      }
      fields.push(field)
    }
    if (p !== e) throw new WireProtocolError(`${e - p} bytes after the last column of a RowDescription`)
    this.decoders = decoders
    return fields
  }

  /** Names the row being decoded, for errors. */
  private where(): string {
    return `row ${this.rowsInResult + 1} of the result`
  }

  private decodeRow(b: Uint8Array, s: number, e: number, fields: WireField[]): RowOf<M> {
    if (e - s < 2) throw new WireProtocolError(`a DataRow shorter than its column count (${this.where()})`)
    const count = readInt16(b, s)
    if (count !== fields.length) throw new WireProtocolError(`a DataRow with ${count} columns where the RowDescription has ${fields.length} (${this.where()})`)
    const values: unknown[] = new Array(count)
    let p = s + 2
    for (let i = 0; i < count; i++) {
      if (e - p < 4) throw new WireProtocolError(`a DataRow truncated at column ${i + 1} (${this.where()})`)
      const len = readInt32(b, p)
      p += 4
      if (len === -1) {
        values[i] = null
        continue
      }
      if (len < 0 || len > e - p) throw new WireProtocolError(`column ${i + 1} has length ${len} with ${e - p} bytes left in the DataRow (${this.where()})`)
      try {
        values[i] = this.decoders[i]!(b, p, p + len)
      } catch (err) {
        const f = fields[i]!
        const typeName = this.types.get(f.typeOid)?.name ?? `type ${f.typeOid}`
        const detail = err instanceof Error ? err.message : String(err)
        throw new WireProtocolError(`column "${f.name}" (${typeName}, ${f.format === 1 ? 'binary' : 'text'}) in ${this.where()}: ${detail}`, { cause: err })
      }
      p += len
    }
    if (p !== e) throw new WireProtocolError(`${e - p} bytes after the last column of a DataRow (${this.where()})`)
    if (this.arrays) return values as RowOf<M>
    const row: Record<string, unknown> = {}
    for (let i = 0; i < count; i++) {
      const name = fields[i]!.name
      // A plain assignment to '__proto__' would replace the row's prototype instead.
      if (name === '__proto__') Object.defineProperty(row, name, { value: values[i], enumerable: true, writable: true, configurable: true })
      else row[name] = values[i]
    }
    return row as RowOf<M>
  }

  // Not protocol/'s decodeErrorFields, for the same reasons as decodeFields;
  // what each field code means is shared (see ErrorFieldsReader).
  private decodeNoticeFields(b: Uint8Array, s: number, e: number, what: string, severity: string): WireNotice {
    const fields = new ErrorFieldsReader(severity)
    let p = s
    for (;;) {
      if (p >= e) throw new WireProtocolError(`${what} without its terminating NUL`)
      const code = b[p]!
      if (code === 0) break
      const nul = findNul(b, p + 1, e)
      if (nul < 0) throw new WireProtocolError(`${what} with an unterminated field`)
      fields.set(code, utf8Text(b, p + 1, nul))
      p = nul + 1
    }
    if (p !== e - 1) throw new WireProtocolError(`${e - 1 - p} bytes after the end of ${what}`)
    return fields.done(severity.toLowerCase())
  }
}
