import { CancelRequestCode, Frontend, SSLRequestCode } from './message-codes.js'
import { MAX_FRONTEND_MESSAGE, type Writer } from './writer.js'
import { ArgumentError } from '../errors.js'

// Encoders for the messages a client sends. Each appends one message to a Writer
// the caller owns, so any number of them coalesce into a single socket write.
// Strings passed as C strings must not contain NUL; callers check user input once.

export function writeStartup(w: Writer, version: number, params: ReadonlyArray<readonly [string, string]>): void {
  const m = w.beginUntyped()
  w.i32(version)
  for (const [k, v] of params) {
    w.cstr(k)
    w.cstr(v)
  }
  w.u8(0)
  w.end(m)
}

export function writeSSLRequest(w: Writer): void {
  const m = w.beginUntyped()
  w.i32(SSLRequestCode)
  w.end(m)
}

/** CancelRequest; the secret key is 4 bytes in protocol 3.0 and up to 256 in 3.2. */
export function writeCancelRequest(w: Writer, processId: number, secretKey: Uint8Array): void {
  const m = w.beginUntyped()
  w.i32(CancelRequestCode)
  w.i32(processId)
  w.bytes(secretKey)
  w.end(m)
}

/** PasswordMessage carrying a cleartext or MD5-hashed password. */
export function writePassword(w: Writer, password: string): void {
  const m = w.begin(Frontend.Password)
  w.cstr(password)
  w.end(m)
}

export function writeSASLInitialResponse(w: Writer, mechanism: string, data: Uint8Array): void {
  const m = w.begin(Frontend.Password)
  w.cstr(mechanism)
  w.i32(data.length)
  w.bytes(data)
  w.end(m)
}

export function writeSASLResponse(w: Writer, data: Uint8Array): void {
  const m = w.begin(Frontend.Password)
  w.bytes(data)
  w.end(m)
}

export function writeParse(w: Writer, name: string, text: string, paramTypes: ArrayLike<number>): void {
  const m = w.begin(Frontend.Parse)
  w.cstr(name)
  w.cstr(text)
  w.i16(paramTypes.length)
  for (let i = 0; i < paramTypes.length; i++) w.i32(paramTypes[i]!)
  w.end(m)
}

/**
 * Starts a Bind message up to and including the parameter count; the caller then
 * writes each parameter (int32 length, -1 for NULL, then the bytes) and calls
 * endBind. Parameter formats: an empty list means all text, one entry applies to
 * all, otherwise one per parameter.
 */
export function beginBind(w: Writer, portal: string, statement: string, paramFormats: ArrayLike<number>, paramCount: number): number {
  const m = w.begin(Frontend.Bind)
  w.cstr(portal)
  w.cstr(statement)
  w.i16(paramFormats.length)
  for (let i = 0; i < paramFormats.length; i++) w.i16(paramFormats[i]!)
  w.i16(paramCount)
  return m
}

/**
 * A whole Bind message whose parameters are written one by one: `param(w, i)`
 * writes parameter i (int32 length or -1, then the bytes) and returns the
 * format it used, so each value can pick binary or text for itself.
 */
export function writeBind(
  w: Writer,
  portal: string,
  statement: string,
  count: number,
  param: (w: Writer, i: number) => number,
  resultFormats: ArrayLike<number>,
): void {
  const m = w.begin(Frontend.Bind)
  w.cstr(portal)
  w.cstr(statement)
  w.i16(count)
  const formats = w.reserve(2 * count)
  w.i16(count)
  for (let i = 0; i < count; i++) w.patch16(formats + 2 * i, param(w, i))
  endBind(w, m, resultFormats)
}

/** Finishes a Bind message with the result column formats (same conventions as parameters). */
export function endBind(w: Writer, mark: number, resultFormats: ArrayLike<number>): void {
  w.i16(resultFormats.length)
  for (let i = 0; i < resultFormats.length; i++) w.i16(resultFormats[i]!)
  w.end(mark)
}

/** Describe a prepared statement ('S') or a portal ('P'). */
export function writeDescribe(w: Writer, kind: 'S' | 'P', name: string): void {
  writeTarget(w, Frontend.Describe, kind, name)
}

/** Describe and Close name their target alike: 'S' (a statement) or 'P' (a portal), then its name. */
function writeTarget(w: Writer, type: number, kind: 'S' | 'P', name: string): void {
  const m = w.begin(type)
  w.u8(kind === 'S' ? 0x53 : 0x50)
  w.cstr(name)
  w.end(m)
}

export function writeExecute(w: Writer, portal: string, maxRows: number): void {
  const m = w.begin(Frontend.Execute)
  w.cstr(portal)
  w.i32(maxRows)
  w.end(m)
}

const SYNC = new Uint8Array([Frontend.Sync, 0, 0, 0, 4])
const FLUSH = new Uint8Array([Frontend.Flush, 0, 0, 0, 4])
const TERMINATE = new Uint8Array([Frontend.Terminate, 0, 0, 0, 4])
const COPY_DONE = new Uint8Array([Frontend.CopyDone, 0, 0, 0, 4])
// Execute of the unnamed portal without a row limit, then Sync: the tail of nearly
// every query, so it is copied as one constant.
const EXECUTE_SYNC = new Uint8Array([Frontend.Execute, 0, 0, 0, 9, 0, 0, 0, 0, 0, Frontend.Sync, 0, 0, 0, 4])

export function writeSync(w: Writer): void {
  w.bytes(SYNC)
}

export function writeFlush(w: Writer): void {
  w.bytes(FLUSH)
}

export function writeTerminate(w: Writer): void {
  w.bytes(TERMINATE)
}

/** Execute('', 0) followed by Sync. */
export function writeExecuteSync(w: Writer): void {
  w.bytes(EXECUTE_SYNC)
}

/** Close a prepared statement ('S') or a portal ('P'). */
export function writeClose(w: Writer, kind: 'S' | 'P', name: string): void {
  writeTarget(w, Frontend.Close, kind, name)
}

/** A simple-protocol Query message. */
export function writeQuery(w: Writer, text: string): void {
  const m = w.begin(Frontend.Query)
  w.cstr(text)
  w.end(m)
}

export function writeCopyData(w: Writer, data: Uint8Array): void {
  const m = w.begin(Frontend.CopyData)
  w.bytes(data)
  w.end(m)
}

/** The header of a CopyData message whose `size` bytes of data follow it separately. */
export function writeCopyDataHeader(w: Writer, size: number): void {
  if (size > MAX_FRONTEND_MESSAGE - 4) throw new ArgumentError(`COPY data of ${size} bytes is more than a PostgreSQL message can hold (${MAX_FRONTEND_MESSAGE} bytes): write it in smaller chunks`)
  w.u8(Frontend.CopyData)
  w.i32(size + 4)
}

export function writeCopyDone(w: Writer): void {
  w.bytes(COPY_DONE)
}

export function writeCopyFail(w: Writer, reason: string): void {
  const m = w.begin(Frontend.CopyFail)
  w.cstr(reason)
  w.end(m)
}
