// Builds result messages for the pipegres/wire tests that need streams no
// server would send (malformed ones) or many random values. The framing
// follows the protocol documentation; the recorded fixtures check that it
// matches what servers really send.

export interface FieldSpec {
  name?: string
  typeOid: number
  format: 0 | 1
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** One message: type byte, int32 length (itself included), body. */
export function message(type: string, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.length)
  out[0] = type.charCodeAt(0)
  new DataView(out.buffer).setInt32(1, body.length + 4)
  out.set(body, 5)
  return out
}

const utf8 = new TextEncoder()

function int16(n: number): Uint8Array {
  const b = new Uint8Array(2)
  new DataView(b.buffer).setInt16(0, n)
  return b
}

export function int32(n: number): Uint8Array {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setInt32(0, n)
  return b
}

export function int64(n: bigint): Uint8Array {
  const b = new Uint8Array(8)
  new DataView(b.buffer).setBigInt64(0, n)
  return b
}

function cstr(s: string): Uint8Array {
  return concat([utf8.encode(s), Uint8Array.of(0)])
}

export function rowDescription(fields: FieldSpec[]): Uint8Array {
  return message(
    'T',
    concat([
      int16(fields.length),
      ...fields.flatMap((f, i) => [cstr(f.name ?? `c${i}`), int32(0), int16(0), int32(f.typeOid), int16(-1), int32(-1), int16(f.format)]),
    ]),
  )
}

/** A DataRow; a string value is written as its UTF-8 bytes. */
export function dataRow(values: (Uint8Array | string | null)[]): Uint8Array {
  return message(
    'D',
    concat([
      int16(values.length),
      ...values.flatMap((v) => {
        if (v === null) return [int32(-1)]
        const b = typeof v === 'string' ? utf8.encode(v) : v
        return [int32(b.length), b]
      }),
    ]),
  )
}

export function commandComplete(tag: string): Uint8Array {
  return message('C', cstr(tag))
}

export function errorResponse(fields: Record<string, string>): Uint8Array {
  return message('E', concat([...Object.entries(fields).map(([k, v]) => cstr(k + v)), Uint8Array.of(0)]))
}

/** A whole result: description, rows, and a SELECT tag. */
export function result(fields: FieldSpec[], rows: (Uint8Array | string | null)[][]): Uint8Array {
  return concat([rowDescription(fields), ...rows.map(dataRow), commandComplete(`SELECT ${rows.length}`)])
}

export { concat }
