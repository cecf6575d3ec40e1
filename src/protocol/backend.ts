import { ErrorFieldsReader, ProtocolError, type PgErrorFields } from '../errors.js'
import { copyBytes, Reader } from './reader.js'

// Decoders for the backend messages that are read once per query or less. The
// per-row DataRow is deliberately absent: rows are decoded by a plan built once
// per statement (see types/), straight from the socket chunk.

/** One column of a RowDescription. */
export interface FieldDescription {
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
  /** 0 text, 1 binary (always 0 in a statement's description). */
  format: number
}

export function decodeRowDescription(buf: Uint8Array, start: number, end: number): FieldDescription[] {
  const r = new Reader(buf, start, end, 'RowDescription')
  const n = r.u16()
  // Each field takes at least 19 bytes (an empty name's NUL and 18 bytes of numbers):
  // a count the body cannot hold fails before an array is made for it.
  if (n * 19 > r.remaining) r.fail()
  const fields: FieldDescription[] = new Array(n)
  for (let i = 0; i < n; i++) {
    fields[i] = {
      name: r.cstr(),
      tableOid: r.u32(),
      columnNumber: r.i16(),
      typeOid: r.u32(),
      typeSize: r.i16(),
      typeModifier: r.i32(),
      format: r.i16(),
    }
  }
  r.done()
  return fields
}

export function decodeParameterDescription(buf: Uint8Array, start: number, end: number): number[] {
  const r = new Reader(buf, start, end, 'ParameterDescription')
  const n = r.u16()
  if (n * 4 !== r.remaining) r.fail()
  const oids: number[] = new Array(n)
  for (let i = 0; i < n; i++) oids[i] = r.u32()
  r.done()
  return oids
}

/** ErrorResponse and NoticeResponse share this format: a field code byte and its text, until a zero byte. */
export function decodeErrorFields(buf: Uint8Array, start: number, end: number, what = 'ErrorResponse'): PgErrorFields {
  const r = new Reader(buf, start, end, what)
  const fields = new ErrorFieldsReader('ERROR')
  for (;;) {
    const code = r.u8()
    if (code === 0) break
    fields.set(code, r.cstr())
  }
  r.done()
  return fields.done(what.replace('Response', '').toLowerCase())
}

export function decodeParameterStatus(buf: Uint8Array, start: number, end: number): [string, string] {
  const r = new Reader(buf, start, end, 'ParameterStatus')
  const name = r.cstr()
  const value = r.cstr()
  r.done()
  return [name, value]
}

export interface BackendKeyData {
  processId: number
  secretKey: Uint8Array
}

export function decodeBackendKeyData(buf: Uint8Array, start: number, end: number): BackendKeyData {
  const r = new Reader(buf, start, end, 'BackendKeyData')
  const processId = r.i32()
  if (r.remaining < 4) r.bytes(4)
  return { processId, secretKey: r.rest() }
}

export interface AuthenticationRequest {
  code: number
  /** What follows the code: salt, SASL mechanism list, SASL data. */
  data: Uint8Array
}

export function decodeAuthentication(buf: Uint8Array, start: number, end: number): AuthenticationRequest {
  const r = new Reader(buf, start, end, 'Authentication')
  const code = r.i32()
  return { code, data: r.rest() }
}

/** The SASL mechanism names of an AuthenticationSASL request. */
export function decodeSaslMechanisms(data: Uint8Array): string[] {
  const r = new Reader(data, 0, data.length, 'AuthenticationSASL')
  const out: string[] = []
  for (;;) {
    const name = r.cstr()
    if (name === '') break
    out.push(name)
  }
  r.done()
  return out
}

export interface NegotiateProtocolVersion {
  /** The version the server offers, major << 16 | minor (the server sends the whole version, not only the minor). */
  version: number
  unsupportedOptions: string[]
}

/**
 * Int32 version, Int32 count of unrecognized options, then that many option
 * names. A count that does not match the body is named in the error: every
 * name takes at least its NUL, so the count is checked before any is read.
 */
export function decodeNegotiateProtocolVersion(buf: Uint8Array, start: number, end: number): NegotiateProtocolVersion {
  const r = new Reader(buf, start, end, 'NegotiateProtocolVersion')
  const version = r.i32()
  const n = r.i32()
  const malformed = (why: string): never => {
    throw new ProtocolError(`malformed NegotiateProtocolVersion message from server: ${why}`)
  }
  if (n < 0) malformed(`it counts ${n} unsupported options`)
  if (n > r.remaining) malformed(`it counts ${n} unsupported options, but only ${r.remaining} bytes follow`)
  const unsupportedOptions: string[] = []
  for (let i = 0; i < n; i++) {
    const nul = buf.indexOf(0, r.pos)
    if (nul < 0 || nul >= end) malformed(`it counts ${n} unsupported options, but its body ends inside option ${i + 1}`)
    unsupportedOptions.push(r.cstr())
  }
  if (r.remaining !== 0) malformed(`${r.remaining} bytes follow the ${n} unsupported options it counts`)
  return { version, unsupportedOptions }
}

/** The last tag decoded, and its bytes with the NUL: pipelined statements mostly repeat it ('SELECT 1'). */
let lastTag = ''
let lastTagBytes: Uint8Array = new Uint8Array(0)

export function decodeCommandComplete(buf: Uint8Array, start: number, end: number): string {
  const n = end - start
  if (n === lastTagBytes.length) {
    let i = 0
    while (i < n && buf[start + i] === lastTagBytes[i]) i++
    if (i === n) return lastTag
  }
  const r = new Reader(buf, start, end, 'CommandComplete')
  const tag = r.cstr()
  r.done()
  if (n <= 64) {
    lastTag = tag
    // A copy: the bytes may be a view of a read buffer that is reused.
    lastTagBytes = copyBytes(buf, start, end)
  }
  return tag
}

/** A CommandComplete tag split into its command and row count. */
export interface CommandTag {
  /** 'SELECT', 'INSERT', 'CREATE TABLE': the whole tag when it carries no count; '' for an empty query. */
  command: string
  /** The count of SELECT, INSERT, UPDATE, DELETE, MERGE, FETCH, MOVE and COPY; otherwise null. */
  rowCount: number | null
}

/** The commands whose tag ends in a row count, with the words of that tag: INSERT's is 'INSERT oid rows'. */
const countedTags = new Map([
  ['SELECT', 2],
  ['INSERT', 3],
  ['UPDATE', 2],
  ['DELETE', 2],
  ['MERGE', 2],
  ['FETCH', 2],
  ['MOVE', 2],
  ['COPY', 2],
])

/**
 * Splits a CommandComplete tag ('INSERT 0 5', 'CREATE TABLE') into command
 * and row count. A tag that does not have the shape its command's has (a
 * count that is not digits, a word too many) is all command, with no count:
 * a count is never read out of something else.
 */
export function splitCommandTag(tag: string): CommandTag {
  const sp = tag.indexOf(' ')
  const words = sp > 0 ? countedTags.get(tag.slice(0, sp)) : undefined
  if (words !== undefined) {
    const last = tag.lastIndexOf(' ')
    const spaces = last === sp ? 1 : tag.indexOf(' ', sp + 1) === last ? 2 : 3
    if (spaces === words - 1 && isDigits(tag, last + 1)) return { command: tag.slice(0, sp), rowCount: Number(tag.slice(last + 1)) }
  }
  return { command: tag, rowCount: null }
}

function isDigits(s: string, from: number): boolean {
  if (from >= s.length) return false
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return false
  }
  return true
}

export interface Notification {
  processId: number
  channel: string
  payload: string
}

export function decodeNotification(buf: Uint8Array, start: number, end: number): Notification {
  const r = new Reader(buf, start, end, 'NotificationResponse')
  const processId = r.i32()
  const channel = r.cstr()
  const payload = r.cstr()
  r.done()
  return { processId, channel, payload }
}

export interface CopyResponse {
  /** 0 text, 1 binary. */
  format: number
  columnFormats: number[]
}

export function decodeCopyResponse(buf: Uint8Array, start: number, end: number, what: string): CopyResponse {
  const r = new Reader(buf, start, end, what)
  const format = r.u8()
  const n = r.u16()
  if (n * 2 !== r.remaining) r.fail()
  const columnFormats: number[] = new Array(n)
  for (let i = 0; i < n; i++) columnFormats[i] = r.i16()
  r.done()
  return { format, columnFormats }
}

/** The transaction status byte of ReadyForQuery: 'I' idle, 'T' in a transaction, 'E' in a failed transaction. */
export type TransactionStatus = 'I' | 'T' | 'E'

export function decodeReadyForQuery(buf: Uint8Array, start: number): TransactionStatus | null {
  const c = buf[start]
  return c === 0x49 ? 'I' : c === 0x54 ? 'T' : c === 0x45 ? 'E' : null
}
