// Records a real server's result messages byte for byte, the way
// Client.queryRaw() forwards them: RowDescription (from Describe of the
// portal, so its format codes are the ones used), DataRow, CommandComplete,
// EmptyQueryResponse, ErrorResponse and NoticeResponse, and nothing else.
// Talks to the server over its own socket with the protocol encoders, so the
// recorded bytes depend on no query code of the client.

import * as net from 'node:net'
import { Framer } from '../../../src/protocol/framer.js'
import { Writer } from '../../../src/protocol/writer.js'
import * as fe from '../../../src/protocol/frontend.js'
import { decodeErrorFields, decodeRowDescription } from '../../../src/protocol/backend.js'
import { binaryDecodable } from '../../../src/wire/formats.js'

/** How result columns are requested: all text; binary for the types pipegres/wire decodes in binary; binary for every column. */
export type CaptureFormat = 'text' | 'binary' | 'all-binary'

interface Message {
  type: string
  /** The whole message: type byte, length, body. */
  raw: Uint8Array
}

const RESULT_TYPES = new Set(['T', 'D', 'C', 'I', 'E', 'N'])

export class WireCapture {
  private messages: Message[] = []
  private waiter: (() => void) | null = null
  private closed = false

  private constructor(private readonly socket: net.Socket) {
    const framer = new Framer({
      // The header sits just before the body in whichever buffer holds the message.
      onMessage: (t, b, s, e) => {
        this.messages.push({ type: String.fromCharCode(t), raw: Uint8Array.from(b.subarray(s - 5, e)) })
        this.waiter?.()
      },
    })
    socket.on('data', (d) => framer.push(d))
    socket.on('close', () => {
      this.closed = true
      this.waiter?.()
    })
    socket.on('error', () => {})
  }

  /** Connects with startup parameters fixed so that the recorded text is reproducible. */
  static async open(target: { host: string; port: number } | { path: string }, user: string, database: string): Promise<WireCapture> {
    const socket = 'path' in target ? net.connect({ path: target.path }) : net.connect(target.port, target.host)
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    const c = new WireCapture(socket)
    c.send((w) =>
      fe.writeStartup(w, 196608, [
        ['user', user],
        ['database', database],
        ['client_encoding', 'UTF8'],
        ['DateStyle', 'ISO, MDY'],
        ['IntervalStyle', 'postgres'],
        ['TimeZone', 'UTC'],
        ['extra_float_digits', '1'],
        ['application_name', 'wire-capture'],
      ]),
    )
    const startup = await c.untilReady()
    const error = startup.find((m) => m.type === 'E')
    if (error) throw new Error(`startup failed: ${errorText(error)}`)
    return c
  }

  private send(fn: (w: Writer) => void): void {
    const w = new Writer()
    fn(w)
    this.socket.write(w.take())
  }

  /** Messages up to and including the next ReadyForQuery. */
  private async untilReady(): Promise<Message[]> {
    const out: Message[] = []
    for (;;) {
      while (this.messages.length === 0) {
        if (this.closed) throw new Error('the server closed the connection')
        await new Promise<void>((r) => (this.waiter = r))
        this.waiter = null
      }
      const m = this.messages.shift()!
      out.push(m)
      if (m.type === 'Z') return out
    }
  }

  private static resultBytes(messages: Message[]): Uint8Array {
    const kept = messages.filter((m) => RESULT_TYPES.has(m.type))
    const out = new Uint8Array(kept.reduce((n, m) => n + m.raw.length, 0))
    let p = 0
    for (const m of kept) {
      out.set(m.raw, p)
      p += m.raw.length
    }
    return out
  }

  /** Runs statements for their effect (SET ...); throws if one fails. */
  async exec(sql: string): Promise<void> {
    this.send((w) => fe.writeQuery(w, sql))
    const error = (await this.untilReady()).find((m) => m.type === 'E')
    if (error) throw new Error(`${sql}: ${errorText(error)}`)
  }

  /** The result messages of one statement run with the extended protocol. */
  async extended(sql: string, format: CaptureFormat): Promise<Uint8Array> {
    let formats: number[] = [format === 'text' ? 0 : 1]
    if (format === 'binary') {
      // Per-column formats need the column types first, as queryRaw learns them.
      this.send((w) => {
        fe.writeParse(w, '', sql, [])
        fe.writeDescribe(w, 'S', '')
        fe.writeSync(w)
      })
      const t = (await this.untilReady()).find((m) => m.type === 'T')
      const fields = t ? decodeRowDescription(t.raw, 5, t.raw.length) : []
      formats = fields.map((f) => (binaryDecodable(f.typeOid) ? 1 : 0))
    }
    this.send((w) => {
      fe.writeParse(w, '', sql, [])
      fe.endBind(w, fe.beginBind(w, '', '', [], 0), formats)
      fe.writeDescribe(w, 'P', '')
      fe.writeExecute(w, '', 0)
      fe.writeSync(w)
    })
    return WireCapture.resultBytes(await this.untilReady())
  }

  /** The result messages of a simple Query (several statements, all in text). */
  async simple(sql: string): Promise<Uint8Array> {
    this.send((w) => fe.writeQuery(w, sql))
    return WireCapture.resultBytes(await this.untilReady())
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.send(fe.writeTerminate)
    this.socket.end()
    await new Promise((r) => this.socket.once('close', r))
  }
}

function errorText(m: Message): string {
  const f = decodeErrorFields(m.raw, 5, m.raw.length)
  return `${f.message} (SQLSTATE ${f.code})`
}
