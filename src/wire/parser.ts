import { ErrorFieldsReader } from '../errors.js'
import { splitCommandTag, type FieldDescription } from '../protocol/backend.js'
import { DEFAULT_MAX_MESSAGE_SIZE, Framer, lengthFault } from '../protocol/framer.js'
import { Backend } from '../protocol/message-codes.js'
import { readInt16, readInt32, readUint32 } from '../types/codecs/binary.js'
import { findNul, utf8Text } from './bytes.js'
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

/** One column of a RowDescription: the Node client's FieldDescription. */
export type WireField = FieldDescription

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

function messageName(type: number): string {
  return RESULT_MESSAGE_NAMES[type] ?? describeType(type)
}

/**
 * The Node client's framing (memory that follows the bytes that arrive, the
 * length each message type may have), with wire's rules on top: only the
 * messages of a query result pass, `maxMessageSize` caps every message, and
 * each refusal is a WireProtocolError worded for wire's users.
 */
class ResultFramer extends Framer {
  protected override checkType(type: number): void {
    if (RESULT_MESSAGE_NAMES[type] === undefined) throw new WireProtocolError(`${describeType(type)} where a query result was expected`)
  }

  protected override check(type: number, len: number): void {
    this.checkType(type)
    const max = this.maxMessageSize
    if (len > max) throw new WireProtocolError(`${messageName(type)} of ${len} bytes, more than maxMessageSize (${max})`)
    const fault = lengthFault(type, len, max)
    if (fault === null) return
    const name = messageName(type)
    if (fault.kind === 'invalid') throw new WireProtocolError(`${name} with invalid length ${len}`)
    if (fault.kind === 'exact') throw new WireProtocolError(`${name} of length ${len}; it must be ${fault.exact}`)
    throw new WireProtocolError(`${name} of ${len} bytes, more than the ${fault.limit} bytes its type can take`)
  }
}

type ValueDecoder = (b: Uint8Array, start: number, end: number) => unknown

const utf8Value: ValueDecoder = (b, s, e) => utf8Text(b, s, e)

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
  private readonly framer: ResultFramer
  /** Where the messages of the chunk being pushed put their events (null outside push()). */
  private events: WireEvent<RowOf<M>>[] | null = null

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
    this.framer = new ResultFramer({ onMessage: (type, b, s, e) => this.handle(type, b, s, e, this.events!) }, max)
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
    const outer = this.events
    this.events = events
    try {
      this.framer.push(chunk)
    } catch (err) {
      // The chunk was consumed only up to the failure: the stream cannot be resumed.
      this.failure = err instanceof Error ? err : new Error(String(err))
      throw err
    } finally {
      this.events = outer
    }
    return events
  }

  /** Declares the stream over; throws a WireProtocolError if it stopped inside a message or inside a result. */
  end(): void {
    this.checkUsable('end')
    this.ended = true
    const held = this.framer.heldMessage
    if (held !== null) throw this.fail(`the stream ended inside ${messageName(held.type)}: ${held.received} of its ${held.size} bytes arrived`)
    const header = this.framer.heldHeaderBytes
    if (header > 0) throw this.fail(`the stream ended inside a message header (${header} of 5 bytes)`)
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
        const completion: WireCompletion = { tag, ...splitCommandTag(tag), empty: false }
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
