import { EventEmitter } from 'node:events'
import { Duplex, type Readable, type Writable } from 'node:stream'
import type { Client as CoreClient, Cursor, Field, Result as CoreResult } from '../../index.js'
import { fieldDef, toPgError } from './result.js'
import type { TypeParserSource } from './types.js'
import { prepareValue } from './values.js'

// pg's submittable protocol: client.query(obj) with obj.submit(connection)
// hands obj pg's connection object, on which it writes protocol messages
// (parse, bind, describe, execute, sync, close; query for the simple
// protocol), and the client calls obj's handle* methods with the server's
// answers. pipegres keeps its connections to itself, so the object gets a
// stand-in for that connection which runs what was asked through pipegres
// (a cursor for a portal, copyFrom/copyTo for COPY, simpleQuery otherwise)
// and answers with the messages pg would deliver. pg-cursor,
// pg-query-stream and pg-copy-streams (which writes COPY frames on
// connection.stream and reads them from it) run unchanged on it.

/** What a submittable is given to run on: a pipegres Client, Pool or ReservedClient. */
export type SubmitRunner = Pick<CoreClient, 'query' | 'simpleQuery' | 'cursor' | 'copyFrom' | 'copyTo'>

type Con = SubmitConnection

/** The handle* methods pg calls on the query it is running (all optional). */
export interface Submittable {
  submit(connection: unknown): unknown
  callback?: unknown
  _result?: { _types?: unknown }
  handleRowDescription?(msg: unknown): void
  handleDataRow?(msg: unknown): void
  handlePortalSuspended?(con: Con): void
  handleCommandComplete?(msg: unknown, con: Con): void
  handleReadyForQuery?(con: Con): void
  handleError?(err: Error, con: Con): void
  handleEmptyQuery?(con: Con): void
  handleCopyInResponse?(con: Con): void
  handleCopyData?(msg: unknown, con: Con): void
}

export function isSubmittable(v: unknown): v is Submittable {
  return v !== null && typeof v === 'object' && typeof (v as { submit?: unknown }).submit === 'function'
}

function rowDescription(fields: readonly Field[]): object {
  return {
    name: 'rowDescription',
    length: 0,
    fieldCount: fields.length,
    // The dataRow messages that follow carry each value as text.
    fields: fields.map((f) => fieldDef(f, 'text')),
  }
}

function commandComplete(command: string, rowCount: number | null): object {
  const text = rowCount === null ? command : command === 'INSERT' ? `INSERT 0 ${rowCount}` : `${command} ${rowCount}`
  return { name: 'commandComplete', length: 0, text }
}

/** pg's text form of a parameter, bytes as bytea text (see toParam in query.ts). */
function param(v: unknown): string | null {
  const p = prepareValue(v)
  return Buffer.isBuffer(p) ? '\\x' + p.toString('hex') : p
}

const COPY_IN = /^\s*COPY\b[\s\S]*\bFROM\s+STDIN\b/i
const COPY_OUT = /^\s*COPY\b[\s\S]*\bTO\s+STDOUT\b/i

/** A protocol message header: type byte and length (itself included). */
function frame(type: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5)
  head.write(type, 0, 'latin1')
  head.writeUInt32BE(body.length + 4, 1)
  return body.length === 0 ? head : Buffer.concat([head, body])
}

/**
 * pg's connection object for one submittable. Events it emits as pg's does
 * ('rowDescription', 'noData', 'readyForQuery', 'end'); `stream` is the raw
 * side pg-copy-streams reads COPY data from and writes COPY data to.
 */
export class SubmitConnection extends EventEmitter {
  readonly stream: CopyStream
  /** Messages written and not yet run (pg's connection buffers them until flush or sync). */
  private ops: ({ k: 'parse'; text: string } | { k: 'bind'; values: unknown[] } | { k: 'execute'; rows: number } | { k: 'close' } | { k: 'sync' })[] = []
  private chain: Promise<void> = Promise.resolve()
  private text = ''
  private values: unknown[] = []
  private cursor: Cursor<unknown[]> | null = null
  private buffered: unknown[][] = []
  private exhausted = false
  private described = false
  private failed = false
  private finished = false

  constructor(
    private readonly runner: SubmitRunner,
    private readonly q: Submittable,
    private readonly done: () => void,
  ) {
    super()
    this.stream = new CopyStream()
  }

  // The messages of the extended protocol: queued, run on flush() or sync().
  parse(msg: { text?: string }): void {
    this.ops.push({ k: 'parse', text: String(msg?.text ?? '') })
  }
  bind(msg: { values?: unknown[] | null }): void {
    this.ops.push({ k: 'bind', values: msg?.values ?? [] })
  }
  describe(): void {
    // Answered with the first rows (or at the end): pipegres describes a portal as it reads it.
  }
  execute(msg: { rows?: number }): void {
    this.ops.push({ k: 'execute', rows: Number(msg?.rows) > 0 ? Number(msg.rows) : 0 })
  }
  close(): void {
    this.ops.push({ k: 'close' })
  }
  flush(): void {
    this.pump()
  }
  sync(): void {
    this.ops.push({ k: 'sync' })
    this.pump()
  }
  /** pg's end(): closes pg's connection. Here the client stays with its owner; the portal is closed. */
  end(): void {
    this.ops.push({ k: 'close' }, { k: 'sync' })
    this.pump()
    this.once('readyForQuery', () => this.emit('end'))
  }

  /** The simple protocol: COPY goes through copyFrom/copyTo, anything else through simpleQuery. */
  query(text: string): void {
    const t = String(text)
    this.chain = this.chain.then(() => (COPY_IN.test(t) ? this.copyIn(t) : COPY_OUT.test(t) ? this.copyOut(t) : this.simple(t)))
  }

  // pg's COPY FROM calls, for submittables that use them rather than the stream.
  sendCopyFromChunk(chunk: Buffer): void {
    this.stream.copyIn?.write(chunk)
  }
  endCopyFrom(): void {
    this.stream.copyIn?.end()
  }
  sendCopyFail(msg: string): void {
    this.stream.copyIn?.destroy(new Error(String(msg)))
  }

  private pump(): void {
    const ops = this.ops
    this.ops = []
    for (const op of ops) this.chain = this.chain.then(() => this.step(op))
  }

  private fail(err: unknown): void {
    if (this.failed || this.finished) return
    this.failed = true
    this.q.handleError?.(toPgError(err) as Error, this)
  }

  private ready(): void {
    if (this.finished) return
    this.finished = true
    this.emit('readyForQuery')
    // After an error pg has already let go of the query: only the connection hears of readyForQuery.
    if (!this.failed) this.q.handleReadyForQuery?.(this)
    this.done()
  }

  private async step(op: SubmitConnection['ops'][number]): Promise<void> {
    if (this.finished) return
    switch (op.k) {
      case 'parse':
        this.text = op.text
        return
      case 'bind':
        this.values = op.values
        return
      case 'execute':
        if (this.failed) return
        return this.executeRows(op.rows)
      case 'close': {
        const c = this.cursor
        this.cursor = null
        this.exhausted = true
        if (c !== null) await c.close().catch(() => undefined)
        return
      }
      case 'sync':
        if (this.cursor !== null) {
          // A Sync ends the implicit transaction the portal lived in.
          const c = this.cursor
          this.cursor = null
          await c.close().catch(() => undefined)
        }
        this.ready()
        return
    }
  }

  private async executeRows(rows: number): Promise<void> {
    if (this.text.trim() === '') {
      this.q.handleEmptyQuery?.(this)
      return
    }
    try {
      if (this.cursor === null && !this.exhausted) {
        this.cursor = this.runner.cursor<unknown[]>(this.text, this.values.map(param), { batchSize: rows > 0 ? rows : 1000, rowMode: 'array' })
      }
      while (!this.exhausted && (rows === 0 || this.buffered.length < rows)) {
        const batch = await this.cursor!.read()
        if (batch.length === 0) this.exhausted = true
        else for (const row of batch) this.buffered.push(row)
      }
    } catch (err) {
      this.cursor = null
      this.exhausted = true
      this.fail(err)
      return
    }
    const cursor = this.cursor
    if (!this.described) {
      this.described = true
      const fields = cursor?.fields ?? []
      if (fields.length > 0) {
        const msg = rowDescription(fields)
        this.emit('rowDescription', msg)
        this.q.handleRowDescription?.(msg)
      } else this.emit('noData')
    }
    const out = rows === 0 ? this.buffered.splice(0) : this.buffered.splice(0, rows)
    for (const row of out) this.q.handleDataRow?.({ name: 'dataRow', length: 0, fieldCount: row.length, fields: row })
    if (this.exhausted && this.buffered.length === 0) {
      this.q.handleCommandComplete?.(commandComplete(cursor?.command || 'SELECT', out.length), this)
    } else this.q.handlePortalSuspended?.(this)
  }

  private async simple(text: string): Promise<void> {
    try {
      const results = (await this.runner.simpleQuery<unknown[]>(text, { rowMode: 'array' })) as CoreResult<unknown[]>[]
      for (const r of results) {
        if (r.fields.length > 0) {
          const msg = rowDescription(r.fields)
          this.emit('rowDescription', msg)
          this.q.handleRowDescription?.(msg)
        }
        for (const row of r.rows) this.q.handleDataRow?.({ name: 'dataRow', length: 0, fieldCount: row.length, fields: row })
        this.q.handleCommandComplete?.(commandComplete(r.command, r.rowCount), this)
      }
      if (results.length === 0) this.q.handleEmptyQuery?.(this)
    } catch (err) {
      try {
        this.fail(err)
      } finally {
        this.ready()
      }
      return
    }
    this.ready()
  }

  /** COPY ... FROM STDIN: what the submittable writes (COPY frames on the stream, or pg's copy calls) goes to copyFrom(). */
  private copyIn(text: string): Promise<void> {
    const w = this.runner.copyFrom(text)
    this.stream.copyIn = w
    w.on('drain', () => this.stream.emit('drain'))
    return new Promise<void>((resolve) => {
      w.result.then(
        (r) => {
          this.q.handleCommandComplete?.(commandComplete('COPY', r.rowCount), this)
          this.stream.copyIn = null
          this.ready()
          resolve()
        },
        (err: unknown) => {
          this.stream.copyIn = null
          // A handler that throws (an 'error' nobody listens for) still leaves the connection to the next query.
          try {
            this.fail(err)
          } finally {
            this.ready()
            resolve()
          }
        },
      )
      // pipegres's writable buffers until the server is ready for the data, so the submittable may start at once.
      process.nextTick(() => {
        if (this.stream.copyIn === w) this.q.handleCopyInResponse?.(this)
      })
    })
  }

  /** COPY ... TO STDOUT: copyTo()'s data, framed as pg's connection stream carries it (CopyOutResponse, CopyData..., CopyDone). */
  private async copyOut(text: string): Promise<void> {
    const r = this.runner.copyTo(text)
    const s = this.stream
    s.source = r
    s.push(frame('H', Buffer.from([0, 0, 0])))
    try {
      await new Promise<void>((resolve, reject) => {
        r.on('data', (chunk: Buffer) => {
          if (!s.push(frame('d', chunk))) r.pause()
        })
        r.once('end', resolve)
        r.once('error', reject)
      })
      const result = await r.result
      this.q.handleCommandComplete?.(commandComplete('COPY', result.rowCount), this)
      s.push(frame('c'))
    } catch (err) {
      this.fail(err)
    }
    s.source = null
    // pg-copy-streams gives the stream back after CopyDone; the rest of the exchange is the client's.
    await new Promise((resolve) => setImmediate(resolve))
    this.ready()
  }
}

/**
 * connection.stream: pg-copy-streams takes it over for a COPY. Its readable
 * side carries the COPY OUT frames (a 'data' listener stands for pg's
 * message parser, which pg-copy-streams detaches and restores); what is
 * written to it is parsed as COPY IN frames (CopyData, CopyDone, CopyFail).
 */
class CopyStream extends Duplex {
  copyIn: Writable & { result?: unknown } | null = null
  source: Readable | null = null
  private head = Buffer.alloc(0)
  private type = 0
  private left = 0

  constructor() {
    super({ highWaterMark: 64 * 1024 })
    // pg's parser reads whatever the submittable leaves on the stream; nothing is left here that matters.
    this.on('data', () => {})
  }

  override _read(): void {
    this.source?.resume()
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, callback: (err?: Error | null) => void): void {
    let pos = 0
    const pending: Buffer[] = []
    while (pos < chunk.length) {
      if (this.left === 0 && this.type === 0) {
        const need = 5 - this.head.length
        this.head = Buffer.concat([this.head, chunk.subarray(pos, pos + need)])
        pos += Math.min(need, chunk.length - pos)
        if (this.head.length < 5) break
        this.type = this.head[0]!
        this.left = this.head.readUInt32BE(1) - 4
        this.head = Buffer.alloc(0)
      }
      const n = Math.min(this.left, chunk.length - pos)
      if (n > 0 && this.type === 0x64) pending.push(chunk.subarray(pos, pos + n))
      pos += n
      this.left -= n
      if (this.left === 0) {
        const type = this.type
        this.type = 0
        // CopyDone ends the COPY; CopyFail ('f') aborts it.
        if (type === 0x63) {
          this.flushData(pending)
          this.copyIn?.end()
        } else if (type === 0x66) {
          this.copyIn?.destroy(new Error('COPY aborted by the client'))
        }
      }
    }
    this.flushData(pending, callback)
  }

  private flushData(parts: Buffer[], callback?: (err?: Error | null) => void): void {
    const w = this.copyIn
    const data = parts.length === 0 ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts)
    parts.length = 0
    if (callback === undefined) {
      if (data !== null && w !== null && !w.writableEnded) w.write(data)
      return
    }
    if (data === null || w === null || w.writableEnded || w.destroyed) {
      callback()
      return
    }
    w.write(data, () => callback())
  }

  override _final(callback: () => void): void {
    callback()
  }
}

/**
 * Runs a submittable on `runner`: resolves once it is over (pg's
 * ReadyForQuery), so that the client can count it among its queries.
 */
export function runSubmittable(runner: SubmitRunner, q: Submittable, types: TypeParserSource): Promise<void> {
  // pg gives a query object the client's parsers when it brings a result of its own (pg-cursor does).
  if (q._result !== undefined && q._result !== null && !q._result._types) q._result._types = types
  return new Promise<void>((resolve) => {
    const con = new SubmitConnection(runner, q, resolve)
    try {
      const refused = q.submit(con)
      if (refused instanceof Error) {
        process.nextTick(() => {
          q.handleError?.(refused, con)
          resolve()
        })
      }
    } catch (err) {
      process.nextTick(() => {
        q.handleError?.(err as Error, con)
        resolve()
      })
    }
  })
}
