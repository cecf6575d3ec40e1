import { createHash } from 'node:crypto'
import { DEFAULT_STATEMENT_CACHE_SIZE } from '../../src/config/resolve.js'
import type { Request, RequestContext } from '../../src/connection/request.js'
import { decodeRowDescription } from '../../src/protocol/backend.js'
import { Framer, type MessageSink } from '../../src/protocol/framer.js'
import { Backend } from '../../src/protocol/message-codes.js'
import { Writer } from '../../src/protocol/writer.js'
import type { ExtendedRequest } from '../../src/query/extended-request.js'
import { Session } from '../../src/query/session.js'
import { makeQuery, type QueryDefaults } from '../../src/queryable/queryable.js'
import { TypeCatalog } from '../../src/types/catalog.js'
import { defaultTypeOptions, hasTemporal, type TypeOptions } from '../../src/types/codec.js'
import { readCodecFixture } from '../lib/codec-capture.js'
import { childMain, measure } from '../lib/measure.js'
import type { Measurement, Task } from '../lib/protocol.js'
import { checksumRows, insertParams, insertUserSql, KEYS, selectUserSql, TYPED_TABLE, userKeys } from '../lib/workloads.js'

// pipegres's CPU cost without a server, to follow between runs. The queries are
// the real ones (makeQuery(), as db.query() makes them) on a stand-in for the
// connection: it hands the query its Writer to encode into, and the server's
// bytes to the Framer and the query's handle(), as Connection does; only the
// socket is missing. So the numbers move with any change to the encoding or
// decoding path, and with nothing else.
//
// codec-decode, variant 'binary' or 'text': the typed table's rows, captured by
// captureCodecFixture(), decoded into a result as db.query() would (binary: a
// prepared statement's executions after the first; text: prepare: false, as the
// typed-read workload runs them). Units: rows. 'binary-temporal' is 'binary'
// with the temporal type option (its timestamptz and date as Temporal values),
// for a runtime with the global Temporal.
// codec-encode, variant 'lookup' (W2), 'insert' (W7) or 'typed' (a row of the
// typed table): Bind + Execute + Sync of a prepared statement's executions after
// the first (parameters in binary where pipegres sends them so). Units: messages.

/** Connection.write flushes once this much is gathered (FLUSH_BYTES in src/connection/connection.ts, not exported). */
const FLUSH_BYTES = 128 * 1024
/** What one socket read typically hands the framer: messages straddle chunks as they do for real. */
const READ_CHUNK = 64 * 1024

/** The parts of Connection a query talks to: its writer, its replies, its session. */
class Wire implements RequestContext, MessageSink {
  readonly attachment: Session
  readonly defaults: QueryDefaults
  readonly writable = true
  /** Bytes handed to the "socket". */
  written = 0
  // Stamped as Connection stamps them, so results cost here what they cost there.
  writeStamp = { at: 0 }
  readAt = 0
  private readonly writer = new Writer()
  private readonly framer = new Framer(this)
  private readonly inflight: Request[] = []

  constructor(prepare: boolean, types: TypeOptions = {}) {
    // As a Client builds them from its options.
    const catalog = new TypeCatalog({ ...defaultTypeOptions, ...types })
    const view = catalog.view()
    this.defaults = { rowMode: 'object', prepare, queryTimeout: undefined, catalog, view }
    const lookup = (): never => {
      throw new Error('a query looked types up: the benchmark would time a round trip that cannot happen here')
    }
    this.attachment = new Session(catalog, view, prepare, DEFAULT_STATEMENT_CACHE_SIZE, lookup, () => 18, lookup, lookup)
  }

  /** Connection.write: encoded at the end of what is gathered, which goes out once big enough. */
  write(req: ExtendedRequest, awaitReplies: boolean): void {
    req.encode(this.writer, this)
    // Encode-only queries never hear back; keeping them would only hold memory.
    if (awaitReplies) this.inflight.push(req)
    if (this.writer.length >= FLUSH_BYTES) this.flush()
  }

  /** What Connection's nextTick flush does. */
  flush(): Uint8Array {
    const out = this.writer.take()
    this.writeStamp.at = performance.now()
    this.writeStamp = { at: 0 }
    this.written += out.length
    return out
  }

  /** The server's bytes, as socket reads. */
  receive(chunks: readonly Uint8Array[]): void {
    for (const c of chunks) {
      this.readAt = performance.now()
      this.framer.push(c)
    }
  }

  onMessage(type: number, buf: Uint8Array, start: number, end: number): void {
    const head = this.inflight[0]
    if (head === undefined) throw new Error(`reply 0x${type.toString(16)} with no query waiting`)
    if (head.handle(type, buf, start, end)) this.inflight.shift()
  }

  get inflightBehind(): number {
    return Math.max(0, this.inflight.length - 1)
  }
  writeNow(fn: (w: Writer) => void, tail?: Uint8Array): void {
    fn(this.writer)
    this.flush()
    if (tail !== undefined) this.written += tail.length
  }
  destroy(err: Error): void {
    throw err
  }
  // Holding the writer matters only with other queries queued, and there are none.
  holdWriter(): void {}
  releaseWriter(): void {}
  writeAhead(): void {
    throw new Error('a query looked types up ahead of the others')
  }
  requestCancel(): void {
    throw new Error('a query asked to be cancelled')
  }
  pauseReading(): void {}
  resumeReading(): void {}
  whenWritable(fn: () => void): void {
    fn()
  }
}

/** One backend message, for the replies the fixture does not hold (ParseComplete, BindComplete...). */
function reply(type: number, body?: (w: Writer) => void): Uint8Array {
  const w = new Writer(1024)
  const m = w.begin(type)
  body?.(w)
  w.end(m)
  return w.take().slice()
}

const parseComplete = reply(Backend.ParseComplete)
const bindComplete = reply(Backend.BindComplete)
const noData = reply(Backend.NoData)
const readyForQuery = reply(Backend.ReadyForQuery, (w) => w.u8(0x49))

function parameterDescription(oids: readonly number[]): Uint8Array {
  return reply(Backend.ParameterDescription, (w) => {
    w.i16(oids.length)
    for (const oid of oids) w.i32(oid)
  })
}

/** A statement's description as the server sends it: all formats 0. */
function rowDescription(columns: readonly (readonly [string, number])[]): Uint8Array {
  return reply(Backend.RowDescription, (w) => {
    w.i16(columns.length)
    for (const [name, oid] of columns) {
      w.cstr(name)
      w.i32(0)
      w.i16(0)
      w.i32(oid)
      w.i16(-1)
      w.i32(-1)
      w.i16(0)
    }
  })
}

const commandComplete = (tag: string): Uint8Array => reply(Backend.CommandComplete, (w) => w.cstr(tag))

/** Messages back to back, cut where socket reads would cut them. */
function chunked(...parts: Uint8Array[]): Uint8Array[] {
  const all = Buffer.concat(parts)
  const out: Uint8Array[] = []
  for (let at = 0; at < all.length; at += READ_CHUNK) out.push(all.subarray(at, at + READ_CHUNK))
  return out
}

/** Runs a query to completion against replies given in advance. */
async function run(wire: Wire, text: string, values: readonly unknown[], replies: readonly Uint8Array[]): Promise<Record<string, unknown>[]> {
  const q = makeQuery(wire.defaults, text, values, undefined)
  wire.write(q, true)
  wire.flush()
  wire.receive(replies)
  return (await q.promise).rows as Record<string, unknown>[]
}

async function decode(task: Task): Promise<Measurement> {
  if (task.fixture === undefined) throw new Error('codec-decode needs a fixture (captureCodecFixture)')
  const fixture = readCodecFixture(task.fixture)
  // Units are the fixture's rows: a size that says otherwise would mislabel every number.
  if (task.size !== fixture.rows) throw new Error(`the fixture holds ${fixture.rows} rows, the task asks for ${task.size}`)
  const part = (format: string): { description: Uint8Array; rest: Uint8Array } => {
    const p = fixture.parts.find((x) => x.format === format)
    if (p === undefined) throw new Error(`the fixture has no ${format} part`)
    return { description: p.bytes.subarray(0, p.descriptionLength), rest: p.bytes.subarray(p.descriptionLength) }
  }
  const text = part('text')
  let wire: Wire
  let replies: Uint8Array[]
  if (task.variant === 'text') {
    // Unnamed statement: Parse, Bind, Describe P, Execute, Sync; all in text.
    wire = new Wire(false)
    replies = chunked(parseComplete, bindComplete, text.description, text.rest, readyForQuery)
  } else if (task.variant === 'binary' || task.variant === 'binary-temporal') {
    const binary = part('binary')
    const temporal = task.variant === 'binary-temporal'
    if (temporal && !hasTemporal()) throw new Error('the binary-temporal variant needs the global Temporal: run it with --node on Node 26')
    wire = new Wire(true, { temporal })
    // The first execution prepares the statement and, bound before its
    // description arrives, gets its rows in text; the later ones, timed, in binary.
    await run(wire, fixture.sql, [], chunked(parseComplete, parameterDescription([]), text.description, bindComplete, text.rest, readyForQuery))
    // The fixture must hold what this pipegres asks for, or the plan would misread it.
    const fields = decodeRowDescription(binary.description, 5, binary.description.length)
    const asked = wire.defaults.view.resultFormats(fields).join()
    const captured = fields.map((f) => f.format).join()
    if (asked !== captured) throw new Error(`pipegres asks for result formats [${asked}] but the fixture holds [${captured}]`)
    replies = chunked(bindComplete, binary.rest, readyForQuery)
  } else throw new Error(`unknown codec-decode variant ${task.variant}`)
  return measure(task, fixture.rows, async () => {
    const rows = await run(wire, fixture.sql, [], replies)
    if (rows.length !== fixture.rows) throw new Error(`decoded ${rows.length} rows of ${fixture.rows}`)
    return checksumRows(rows)
  })
}

/** A statement of each encode variant, what the server says of it, and its parameter sets. */
interface EncodeCase {
  text: string
  paramTypes: readonly number[]
  /** The statement's result columns, or none (NoData). */
  columns: readonly (readonly [string, number])[]
  tag: string
  values: (n: number) => unknown[][]
}

const UUID = 2950
const TEXT = 25

function uuidOf(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** Row g of the typed table, as an application would hold it (compare setupSql). */
function typedRow(g: number): unknown[] {
  const md5 = createHash('md5').update(String(g)).digest()
  return [
    g,
    BigInt(g) * 1000003n,
    g / 7,
    (g * 3.14159).toFixed(4),
    g % 2 === 0,
    new Date(Date.UTC(2024, 0, 1) + g * 1000),
    new Date(Date.UTC(2024, 0, 1 + (g % 1000))).toISOString().slice(0, 10),
    uuidOf(md5.toString('hex')),
    { id: g, name: `item ${g}`, tags: ['a', 'b'] },
    md5,
    [`tag${g % 10}`, 'x', 'y'],
  ]
}

const encodeCases: Record<string, EncodeCase> = {
  lookup: {
    text: selectUserSql,
    paramTypes: [UUID],
    columns: [
      ['id', UUID],
      ['name', TEXT],
      ['email', TEXT],
    ],
    tag: 'SELECT 1',
    values: () => userKeys(KEYS).map((k) => [k]),
  },
  insert: {
    text: insertUserSql,
    paramTypes: [UUID, TEXT, TEXT, TEXT],
    columns: [],
    tag: 'INSERT 0 1',
    values: (n) => {
      const keys = userKeys(Math.min(n, KEYS))
      return keys.map((_, i) => insertParams(keys, i))
    },
  },
  typed: {
    text: `INSERT INTO ${TYPED_TABLE} (id, i8, f8, num, flag, ts, d, u, j, by, tags) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    // int4, int8, float8, numeric, bool, timestamptz, date, uuid, jsonb, bytea, text[]: what the server infers from the columns.
    paramTypes: [23, 20, 701, 1700, 16, 1184, 1082, UUID, 3802, 17, 1009],
    columns: [],
    tag: 'INSERT 0 1',
    values: (n) => Array.from({ length: Math.min(n, KEYS) }, (_, i) => typedRow(i + 1)),
  },
}

/** The parameter format codes of the Bind at the start of `bytes`. */
function bindFormats(bytes: Uint8Array): number[] {
  if (bytes[0] !== 0x42) throw new Error('the query did not start with a Bind: its statement is not prepared')
  let at = bytes.indexOf(0, 5) + 1 // portal
  at = bytes.indexOf(0, at) + 1 // statement
  const n = (bytes[at]! << 8) | bytes[at + 1]!
  const out: number[] = []
  for (let i = 0; i < n; i++) out.push((bytes[at + 2 + 2 * i]! << 8) | bytes[at + 3 + 2 * i]!)
  return out
}

async function encode(task: Task): Promise<Measurement> {
  const c = encodeCases[task.variant]
  if (c === undefined) throw new Error(`unknown codec-encode variant ${task.variant}`)
  const n = task.size
  // Computed before anything is timed, as the workloads do: the application's values, not their making.
  const values = c.values(n)
  const wire = new Wire(true)
  // The first execution prepares (and, for values only their type can place,
  // describes) the statement; the later ones are bound by the types learned.
  const description = c.columns.length > 0 ? rowDescription(c.columns) : noData
  await run(wire, c.text, values[0]!, chunked(parseComplete, parameterDescription(c.paramTypes), description, bindComplete, commandComplete(c.tag), readyForQuery))
  wire.write(makeQuery(wire.defaults, c.text, values[0]!, undefined), false)
  const formats = bindFormats(wire.flush()).join('')
  // Queries are made untimed: what is measured is their encoding.
  let queries: ExtendedRequest[] = []
  const make = async (): Promise<void> => {
    queries = new Array<ExtendedRequest>(n)
    for (let i = 0; i < n; i++) queries[i] = makeQuery(wire.defaults, c.text, values[i % values.length]!, undefined)
  }
  return measure(
    task,
    n,
    async () => {
      const before = wire.written
      for (let i = 0; i < n; i++) wire.write(queries[i]!, false)
      wire.flush()
      return `${n} messages, ${wire.written - before} bytes, parameter formats ${formats}`
    },
    false,
    { before: make },
  )
}

await childMain(async (task: Task) => {
  switch (task.workload) {
    case 'codec-decode':
      return decode(task)
    case 'codec-encode':
      return encode(task)
    default:
      throw new Error(`unknown workload ${task.workload}`)
  }
})
