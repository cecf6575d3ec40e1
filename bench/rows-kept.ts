import { createHash } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { DEFAULT_STATEMENT_CACHE_SIZE } from '../src/config/resolve.js'
import type { Request, RequestContext } from '../src/connection/request.js'
import { connect } from '../src/index.js'
import { decodeRowDescription } from '../src/protocol/backend.js'
import { Framer, type MessageSink } from '../src/protocol/framer.js'
import { Backend } from '../src/protocol/message-codes.js'
import { Writer } from '../src/protocol/writer.js'
import type { ExtendedRequest } from '../src/query/extended-request.js'
import { Session } from '../src/query/session.js'
import { makeQuery, type QueryDefaults } from '../src/queryable/queryable.js'
import { TypeCatalog } from '../src/types/catalog.js'
import { defaultTypeOptions } from '../src/types/codec.js'
import { startServer, stopAllOnSignals } from '../test/support/servers/postgres.js'
import { captureCodecFixture, readCodecFixture } from './lib/codec-capture.js'
import { setupSql, typedReadSql, usersReadSql } from './lib/workloads.js'

// W4 without a server: the users and typed reads (bench/lib/workload-table.ts,
// users-read and typed-read) decoded from captured bytes into a collected
// result, as db.query() does, every row kept until the result is dropped. Pure
// CPU, so that two builds can be compared on a loaded machine, alternating.
//
//   node build/bench/rows-kept.js capture DIR
//     starts a server, fills the tables as `npm run bench` does, and writes
//     DIR/users.fixture (100,000 rows) and DIR/typed.fixture (200,000 rows).
//   node build/bench/rows-kept.js run DIR/users.fixture [--format binary|text]
//       [--mode object|array|lazy|discard] [--reps N] [--digest]
//     decodes the fixture N times (after two unmeasured runs) and prints one
//     line of JSON: this process's CPU per row (ns) for every run, their median
//     and mean (the mean carries the collections that fall in some runs and
//     not others, so it is the figure to compare), wall time, the time spent in
//     GC (PerformanceObserver), and with
//     --digest a hash of every decoded value (to check two builds agree).
//     --mode discard decodes each row as an object and drops it, as a stream's
//     consumer would.

/** What one socket read typically hands the framer. */
const READ_CHUNK = 64 * 1024

/** The parts of Connection a query talks to (as in bench/clients/codec.ts). */
class Wire implements RequestContext, MessageSink {
  readonly attachment: Session
  readonly defaults: QueryDefaults
  readonly writable = true
  writeStamp = { at: 0 }
  readAt = 0
  private readonly writer = new Writer()
  private readonly framer = new Framer(this)
  private readonly inflight: Request[] = []

  constructor(prepare: boolean, rowMode: 'object' | 'array' | 'lazy') {
    const catalog = new TypeCatalog({ ...defaultTypeOptions })
    const view = catalog.view()
    this.defaults = { rowMode, prepare, queryTimeout: undefined, catalog, view }
    const lookup = (): never => {
      throw new Error('a query looked types up')
    }
    this.attachment = new Session(catalog, view, prepare, DEFAULT_STATEMENT_CACHE_SIZE, lookup, () => 18, lookup, lookup)
  }
  write(req: ExtendedRequest, awaitReplies: boolean): void {
    req.encode(this.writer, this)
    if (awaitReplies) this.inflight.push(req)
  }
  flush(): Uint8Array {
    const out = this.writer.take()
    this.writeStamp.at = performance.now()
    this.writeStamp = { at: 0 }
    return out
  }
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
  writeNow(fn: (w: Writer) => void): void {
    fn(this.writer)
    this.flush()
  }
  destroy(err: Error): void {
    throw err
  }
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

function reply(type: number, body?: (w: Writer) => void): Uint8Array {
  const w = new Writer(1024)
  const m = w.begin(type)
  body?.(w)
  w.end(m)
  return w.take().slice()
}

const parseComplete = reply(Backend.ParseComplete)
const bindComplete = reply(Backend.BindComplete)
const readyForQuery = reply(Backend.ReadyForQuery, (w) => w.u8(0x49))
const noParameters = reply(Backend.ParameterDescription, (w) => w.i16(0))

/** Messages back to back, cut where socket reads would cut them; each chunk a copy, as a socket read is. */
function chunked(...parts: Uint8Array[]): Uint8Array[] {
  const all = Buffer.concat(parts)
  const out: Uint8Array[] = []
  for (let at = 0; at < all.length; at += READ_CHUNK) out.push(all.subarray(at, at + READ_CHUNK))
  return out
}

async function run(wire: Wire, text: string, replies: readonly Uint8Array[]): Promise<unknown[]> {
  const q = makeQuery(wire.defaults, text, [], undefined)
  wire.write(q, true)
  wire.flush()
  wire.receive(replies)
  return (await q.promise).rows
}

/** Every value of every row, in a form that tells types apart. */
function digest(rows: readonly unknown[]): string {
  const h = createHash('sha256')
  const put = (v: unknown): void => {
    if (v === null) h.update('N')
    else if (typeof v === 'string') h.update(`s${v.length}:${v}`)
    else if (typeof v === 'number') h.update(`n${Object.is(v, -0) ? '-0' : String(v)};`)
    else if (typeof v === 'bigint') h.update(`b${v};`)
    else if (typeof v === 'boolean') h.update(v ? 'T' : 'F')
    else if (v instanceof Date) h.update(`d${v.getTime()};`)
    else if (v instanceof Uint8Array) h.update(`u${v.constructor.name}${v.length}:${Buffer.from(v.buffer, v.byteOffset, v.length).toString('hex')}`)
    else if (Array.isArray(v)) {
      h.update(`a${v.length}[`)
      for (const x of v) put(x)
      h.update(']')
    } else if (typeof v === 'object') {
      const proto = Object.getPrototypeOf(v) as object | null
      h.update(`o${proto === Object.prototype ? 'O' : proto === null ? '0' : '?'}{`)
      for (const k of Object.keys(v)) {
        h.update(`k${k.length}:${k}`)
        put((v as Record<string, unknown>)[k])
      }
      h.update('}')
    } else h.update(`?${String(v)}`)
  }
  for (const r of rows) put(r)
  return h.digest('hex').slice(0, 16)
}

async function capture(dir: string): Promise<void> {
  stopAllOnSignals()
  mkdirSync(dir, { recursive: true })
  const server = await startServer({ name: 'rows-kept', settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } })
  try {
    const target = { host: server.host, port: server.port, user: server.superuser.user, password: server.superuser.password, database: server.database }
    const db = await connect({ ...target, sslmode: 'disable' })
    for (const sql of setupSql(200_000, 100_000)) await db.query(sql)
    await db.end()
    await captureCodecFixture(target, 100_000, join(dir, 'users.fixture'), usersReadSql(100_000))
    await captureCodecFixture(target, 200_000, join(dir, 'typed.fixture'), typedReadSql(200_000))
  } finally {
    await server.stop()
  }
}

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`)
  return at < 0 ? fallback : process.argv[at + 1]!
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

async function measureRuns(file: string): Promise<void> {
  const fixture = readCodecFixture(file)
  const format = option('format', 'binary')
  const mode = option('mode', 'object')
  const reps = Number(option('reps', '10'))
  const part = (f: string): { description: Uint8Array; rest: Uint8Array } => {
    const p = fixture.parts.find((x) => x.format === f)
    if (p === undefined) throw new Error(`the fixture has no ${f} part`)
    return { description: p.bytes.subarray(0, p.descriptionLength), rest: p.bytes.subarray(p.descriptionLength) }
  }
  const text = part('text')
  let wire: Wire
  let replies: Uint8Array[]
  let dataRows: Uint8Array
  if (format === 'text') {
    wire = new Wire(false, mode === 'discard' ? 'object' : (mode as 'object'))
    replies = chunked(parseComplete, bindComplete, text.description, text.rest, readyForQuery)
    dataRows = text.rest
  } else {
    const binary = part('binary')
    wire = new Wire(true, mode === 'discard' ? 'object' : (mode as 'object'))
    await run(wire, fixture.sql, chunked(parseComplete, noParameters, text.description, bindComplete, text.rest, readyForQuery))
    const fields = decodeRowDescription(binary.description, 5, binary.description.length)
    const asked = wire.defaults.view.resultFormats(fields).join()
    const captured = fields.map((f) => f.format).join()
    if (asked !== captured) throw new Error(`pipegres asks for result formats [${asked}] but the fixture holds [${captured}]`)
    replies = chunked(bindComplete, binary.rest, readyForQuery)
    dataRows = binary.rest
  }
  let once: () => Promise<unknown[] | number>
  if (mode === 'discard') {
    // A stream's consumer: each row made and dropped.
    const desc = format === 'text' ? text.description : part('binary').description
    const fields = decodeRowDescription(desc, 5, desc.length)
    const plan = wire.defaults.view.plan(fields, fields.map((f) => f.format))
    const spans: number[] = []
    const bytes = Buffer.from(dataRows)
    for (let at = 0; bytes[at] === Backend.DataRow; ) {
      const len = bytes.readInt32BE(at + 1)
      spans.push(at + 5, at + 1 + len)
      at += 1 + len
    }
    once = async () => {
      let n = 0
      for (let i = 0; i < spans.length; i += 2) {
        const row = plan.row('object', bytes, spans[i]!, spans[i + 1]!) as Record<string, unknown>
        if (row !== null) n++
      }
      return n
    }
  } else once = () => run(wire, fixture.sql, replies)
  let gcMs = 0
  const { PerformanceObserver } = await import('node:perf_hooks')
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration
  })
  obs.observe({ entryTypes: ['gc'] })
  let dig = ''
  for (let i = 0; i < 2; i++) {
    const rows = await once()
    if (i === 0 && process.argv.includes('--digest') && Array.isArray(rows)) dig = digest(rows)
  }
  const cpu: number[] = []
  const wall: number[] = []
  const gc: number[] = []
  for (let i = 0; i < reps; i++) {
    await new Promise((r) => setImmediate(r))
    const g0 = gcMs
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const rows = await once()
    const t1 = performance.now()
    const c = process.cpuUsage(c0)
    await new Promise((r) => setImmediate(r))
    const n = Array.isArray(rows) ? rows.length : rows
    if (n !== fixture.rows) throw new Error(`decoded ${n} rows of ${fixture.rows}`)
    cpu.push(((c.user + c.system) / fixture.rows) * 1000)
    wall.push(((t1 - t0) * 1e6) / fixture.rows)
    gc.push(((gcMs - g0) * 1e6) / fixture.rows)
  }
  obs.disconnect()
  const r = (x: number): number => Math.round(x)
  process.stdout.write(
    JSON.stringify({
      node: process.versions.node,
      file,
      format,
      mode,
      rows: fixture.rows,
      cpuNsPerRow: r(median(cpu)),
      meanCpuNsPerRow: r(cpu.reduce((a, b) => a + b, 0) / cpu.length),
      wallNsPerRow: r(median(wall)),
      gcNsPerRow: r(median(gc)),
      cpu: cpu.map(r),
      ...(dig ? { digest: dig } : {}),
    }) + '\n',
  )
}

const [, , command, arg] = process.argv
if (command === 'capture' && arg) await capture(arg)
else if (command === 'run' && arg) await measureRuns(arg)
else {
  process.stderr.write('usage: rows-kept.js capture DIR | run FIXTURE [--format binary|text] [--mode object|array|lazy|discard] [--reps N] [--digest]\n')
  process.exitCode = 2
}
