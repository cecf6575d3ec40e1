// Builds backend messages byte for byte, for tests that play the server: the
// scripted fake backend, the browser-side parser's inputs, the fuzzer's
// seeds. Plain Uint8Array and no node:* import, so the browser-side tests can
// use it as they are; the framing follows the protocol documentation, and the
// recorded fixtures check that it matches what servers really send.

export type Bytes = Uint8Array

const utf8 = new TextEncoder()

export function concat(parts: readonly Bytes[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

export function int16(n: number): Bytes {
  const b = new Uint8Array(2)
  new DataView(b.buffer).setInt16(0, n)
  return b
}

/** Big-endian int32; values up to 2^32 - 1 wrap, so an OID can be passed as it is. */
export function int32(n: number): Bytes {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setInt32(0, n | 0)
  return b
}

export function int64(n: bigint): Bytes {
  const b = new Uint8Array(8)
  new DataView(b.buffer).setBigInt64(0, n)
  return b
}

/** A NUL-terminated UTF-8 string. */
export function cstr(s: string): Bytes {
  return concat([utf8.encode(s), Uint8Array.of(0)])
}

/** A part of a message body: bytes as they are, a list of byte values, or a string written as a C string. */
export type Part = Bytes | readonly number[] | string

/** One message: type byte (a letter or any byte value), int32 length (itself included), body. */
export function message(type: string | number, ...parts: Part[]): Bytes {
  const body = concat(parts.map((p) => (typeof p === 'string' ? cstr(p) : p instanceof Uint8Array ? p : Uint8Array.from(p))))
  return concat([Uint8Array.of(typeof type === 'string' ? type.charCodeAt(0) : type), int32(body.length + 4), body])
}

/** A column of a RowDescription; what is left out is what a server sends for a computed text column. */
export interface FieldSpec {
  name?: string
  tableOid?: number
  columnNumber?: number
  typeOid: number
  typeSize?: number
  typeModifier?: number
  format?: number
}

/** A column by name alone (text), by name and type, or in full. */
export type Column = string | readonly [name: string, typeOid: number] | FieldSpec

function field(c: Column): FieldSpec {
  if (typeof c === 'string') return { name: c, typeOid: 25 }
  if (Array.isArray(c)) return { name: c[0], typeOid: c[1] }
  return c as FieldSpec
}

export function rowDescriptionBody(columns: readonly Column[]): Bytes {
  return concat([
    int16(columns.length),
    ...columns.map(field).flatMap((f, i) => [
      cstr(f.name ?? `c${i}`),
      int32(f.tableOid ?? 0),
      int16(f.columnNumber ?? 0),
      int32(f.typeOid),
      int16(f.typeSize ?? -1),
      int32(f.typeModifier ?? -1),
      int16(f.format ?? 0),
    ]),
  ])
}

export const rowDescription = (columns: readonly Column[]): Bytes => message('T', rowDescriptionBody(columns))

/** A DataRow's body; a string value is written as its UTF-8 bytes, null as NULL. */
export function dataRowBody(values: readonly (Bytes | string | null)[]): Bytes {
  return concat([
    int16(values.length),
    ...values.flatMap((v) => {
      if (v === null) return [int32(-1)]
      const b = typeof v === 'string' ? utf8.encode(v) : v
      return [int32(b.length), b]
    }),
  ])
}

export const dataRow = (values: readonly (Bytes | string | null)[]): Bytes => message('D', dataRowBody(values))

/** The fields of an ErrorResponse or NoticeResponse, keyed by their one-letter codes. */
export function noticeFieldsBody(fields: Record<string, string>): Bytes {
  return concat([...Object.entries(fields).map(([k, v]) => cstr(k + v)), Uint8Array.of(0)])
}

export const errorResponse = (fields: Record<string, string>): Bytes => message('E', noticeFieldsBody(fields))
export const noticeResponse = (fields: Record<string, string>): Bytes => message('N', noticeFieldsBody(fields))
export const commandComplete = (tag: string): Bytes => message('C', tag)
export const authOk = (): Bytes => message('R', int32(0))
export const readyForQuery = (status = 'I'): Bytes => message('Z', utf8.encode(status))
export const parseComplete = (): Bytes => message('1')
export const bindComplete = (): Bytes => message('2')
export const noData = (): Bytes => message('n')
export const closeComplete = (): Bytes => message('3')
export const portalSuspended = (): Bytes => message('s')
export const emptyQueryResponse = (): Bytes => message('I')
/** NotificationResponse: a NOTIFY on `channel` from backend `pid`. */
export const notification = (pid: number, channel: string, payload = ''): Bytes => message('A', int32(pid), channel, payload)
export const parameterStatus = (name: string, value: string): Bytes => message('S', name, value)
export const backendKeyData = (pid: number, key: Bytes = Uint8Array.of(1, 2, 3, 4)): Bytes => message('K', int32(pid), key)
export const parameterDescription = (oids: readonly number[]): Bytes => message('t', int16(oids.length), ...oids.map(int32))

/** A whole result of the simple protocol: description, rows, and a SELECT tag. */
export function result(columns: readonly Column[], rows: readonly (readonly (Bytes | string | null)[])[]): Bytes {
  return concat([rowDescription(columns), ...rows.map(dataRow), commandComplete(`SELECT ${rows.length}`)])
}

/** The usual end of a successful trust startup. */
export function startupOk(pid = 4242): Bytes {
  return concat([authOk(), parameterStatus('server_version', '18.0'), parameterStatus('client_encoding', 'UTF8'), backendKeyData(pid), readyForQuery()])
}
