// Reads what a client writes, for tests that play the server: the typed
// messages of the extended and simple protocols parsed into their fields, and
// a one-line rendering of each for failure messages. Written from the
// protocol documentation ("Message Formats"), independently of
// src/protocol/frontend.ts, so that a test checks the writer instead of
// sharing its mistakes.

const utf8 = new TextDecoder()

/** A parameter of a Bind: its text (text format), its bytes (binary format), or null. */
export type BoundValue = string | Uint8Array | null

export interface ParseMessage {
  type: 'Parse'
  name: string
  sql: string
  types: number[]
}
export interface BindMessage {
  type: 'Bind'
  portal: string
  statement: string
  paramFormats: number[]
  params: BoundValue[]
  resultFormats: number[]
}
export interface DescribeMessage {
  type: 'Describe'
  kind: 'S' | 'P'
  name: string
}
export interface ExecuteMessage {
  type: 'Execute'
  portal: string
  maxRows: number
}
export interface CloseMessage {
  type: 'Close'
  kind: 'S' | 'P'
  name: string
}
export interface QueryMessage {
  type: 'Query'
  sql: string
}
export interface CopyDataMessage {
  type: 'CopyData'
  data: Uint8Array
}
export interface CopyFailMessage {
  type: 'CopyFail'
  reason: string
}
/** Messages with no body of interest. */
export interface BareMessage {
  type: 'Sync' | 'Flush' | 'Terminate' | 'CopyDone'
}
/** A message the parser does not take apart (a password, a function call). */
export interface OtherMessage {
  type: 'Other'
  code: string
  body: Uint8Array
}

export type FrontendMessage =
  | ParseMessage
  | BindMessage
  | DescribeMessage
  | ExecuteMessage
  | CloseMessage
  | QueryMessage
  | CopyDataMessage
  | CopyFailMessage
  | BareMessage
  | OtherMessage

export type FrontendType = FrontendMessage['type']

/** Reads one message body field by field; running past the end is a malformed message. */
class BodyReader {
  private at = 0
  private readonly view: DataView

  constructor(
    private readonly body: Uint8Array,
    private readonly what: string,
  ) {
    this.view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  }

  private need(n: number): void {
    if (this.at + n > this.body.length) throw new Error(`malformed ${this.what}: ${this.body.length} bytes, needed ${this.at + n}`)
  }

  i16(): number {
    this.need(2)
    const v = this.view.getInt16(this.at)
    this.at += 2
    return v
  }

  i32(): number {
    this.need(4)
    const v = this.view.getInt32(this.at)
    this.at += 4
    return v
  }

  u8(): number {
    this.need(1)
    return this.body[this.at++]!
  }

  bytes(n: number): Uint8Array {
    this.need(n)
    const b = this.body.slice(this.at, this.at + n)
    this.at += n
    return b
  }

  cstr(): string {
    const end = this.body.indexOf(0, this.at)
    if (end < 0) throw new Error(`malformed ${this.what}: a string without its NUL`)
    const s = utf8.decode(this.body.subarray(this.at, end))
    this.at = end + 1
    return s
  }

  rest(): Uint8Array {
    return this.bytes(this.body.length - this.at)
  }

  /** The body must be used up: trailing bytes mean the writer and the reader disagree on the format. */
  done(): void {
    if (this.at !== this.body.length) throw new Error(`malformed ${this.what}: ${this.body.length - this.at} bytes left over`)
  }
}

function kindOf(byte: number, what: string): 'S' | 'P' {
  if (byte === 0x53) return 'S'
  if (byte === 0x50) return 'P'
  throw new Error(`malformed ${what}: kind byte 0x${byte.toString(16)}`)
}

/** Parses one typed message from its type byte and body (what follows the length). */
export function parseFrontend(code: number, body: Uint8Array): FrontendMessage {
  const letter = String.fromCharCode(code)
  const r = new BodyReader(body, `message '${letter}'`)
  let m: FrontendMessage
  switch (letter) {
    case 'P': {
      const name = r.cstr()
      const sql = r.cstr()
      const n = r.i16()
      m = { type: 'Parse', name, sql, types: Array.from({ length: n }, () => r.i32()) }
      break
    }
    case 'B': {
      const portal = r.cstr()
      const statement = r.cstr()
      const paramFormats = Array.from({ length: r.i16() }, () => r.i16())
      const count = r.i16()
      const params: BoundValue[] = []
      for (let i = 0; i < count; i++) {
        const len = r.i32()
        if (len < 0) {
          params.push(null)
          continue
        }
        const raw = r.bytes(len)
        // Formats: none means all text, one applies to all, else one each.
        const format = paramFormats.length === 0 ? 0 : paramFormats.length === 1 ? paramFormats[0]! : paramFormats[i]!
        params.push(format === 0 ? utf8.decode(raw) : raw)
      }
      const resultFormats = Array.from({ length: r.i16() }, () => r.i16())
      m = { type: 'Bind', portal, statement, paramFormats, params, resultFormats }
      break
    }
    case 'D':
      m = { type: 'Describe', kind: kindOf(r.u8(), 'Describe'), name: r.cstr() }
      break
    case 'E':
      m = { type: 'Execute', portal: r.cstr(), maxRows: r.i32() }
      break
    case 'C':
      m = { type: 'Close', kind: kindOf(r.u8(), 'Close'), name: r.cstr() }
      break
    case 'Q':
      m = { type: 'Query', sql: r.cstr() }
      break
    case 'd':
      m = { type: 'CopyData', data: r.rest() }
      break
    case 'f':
      m = { type: 'CopyFail', reason: r.cstr() }
      break
    case 'S':
      m = { type: 'Sync' }
      break
    case 'H':
      m = { type: 'Flush' }
      break
    case 'X':
      m = { type: 'Terminate' }
      break
    case 'c':
      m = { type: 'CopyDone' }
      break
    default:
      return { type: 'Other', code: letter, body: r.rest() }
  }
  r.done()
  return m
}

/** The startup-phase packet (no type byte): its protocol code and, for a StartupMessage, its parameters. */
export interface StartupPacket {
  code: number
  params: Record<string, string>
}

export function parseStartup(body: Uint8Array): StartupPacket {
  const r = new BodyReader(body, 'startup packet')
  const code = r.i32()
  const params: Record<string, string> = {}
  // Only a StartupMessage (protocol 3.x) carries name/value pairs; SSLRequest and CancelRequest carry numbers.
  if (code >> 16 === 3) {
    for (let key = r.cstr(); key !== ''; key = r.cstr()) params[key] = r.cstr()
  }
  return { code, params }
}

function show(v: unknown): string {
  if (v instanceof Uint8Array) return `<${v.length} bytes>`
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`
  return String(v)
}

/** One line for a message: its type and fields, as failure messages list them. */
export function describeFrontend(m: FrontendMessage): string {
  const fields = Object.entries(m).filter(([k]) => k !== 'type')
  if (fields.length === 0) return m.type
  return `${m.type} ${fields.map(([k, v]) => `${k}=${show(v)}`).join(' ')}`
}

/** The field values of a message, by field name, for checks that name them. */
export function fieldsOf(m: FrontendMessage): Record<string, unknown> {
  return m as unknown as Record<string, unknown>
}

/** Describes a field check: a value, a pattern, or a predicate with its label. */
export function showExpected(v: unknown): string {
  if (v instanceof RegExp) return String(v)
  if (typeof v === 'function') return `<${(v as { label?: string }).label ?? 'check'}>`
  return show(v)
}
