// Raw access to a real server's value bytes, below the query layer, so codec
// tests can check their decoders against exactly what PostgreSQL sends (in text
// and in binary) and their encoders against what PostgreSQL accepts. In a
// PGlite run (test/support/target.ts) the bytes are PGlite's, through
// pipegres/pglite's byte stream into its one session.

import * as net from 'node:net'
import type { ByteStream } from '../../../src/index.js'
import { Framer } from '../../../src/protocol/framer.js'
import { Writer } from '../../../src/protocol/writer.js'
import * as fe from '../../../src/protocol/frontend.js'
import { decodeErrorFields, decodeParameterDescription, decodeRowDescription, type FieldDescription } from '../../../src/protocol/backend.js'
import { pgliteSessionStream } from '../servers/pglite-target.js'
import { getTestServer } from '../servers/test-server.js'
import { onPGlite } from '../target.js'

export interface Msg {
  type: string
  body: Buffer
}

/**
 * A bare protocol socket to the test server: incoming messages are framed and
 * queued, and read one at a time. Subclasses speak the exchanges they test.
 */
export class WireSocket {
  private queue: Msg[] = []
  private waiter: (() => void) | null = null
  protected closed = false

  protected constructor(protected readonly socket: ByteStream) {
    const framer = new Framer({
      onMessage: (t, b, s, e) => {
        this.queue.push({ type: String.fromCharCode(t), body: Buffer.from(b.subarray(s, e)) })
        this.waiter?.()
      },
    })
    socket.on('data', (d: Uint8Array) => framer.push(d))
    socket.on('close', () => {
      this.closed = true
      this.waiter?.()
    })
    socket.on('error', () => {})
  }

  /** A connected socket to `path` (a unix socket). */
  protected static async socketTo(path: string): Promise<net.Socket> {
    const socket = net.connect({ path })
    await new Promise<void>((res, rej) => socket.once('connect', res).once('error', rej))
    return socket
  }

  send(fn: (w: Writer) => void): void {
    const w = new Writer()
    fn(w)
    this.socket.write(w.take())
  }

  protected async next(): Promise<Msg> {
    while (this.queue.length === 0) {
      if (this.closed) throw new Error('wire connection closed')
      await new Promise<void>((r) => (this.waiter = r))
      this.waiter = null
    }
    return this.queue.shift()!
  }
}

/** One raw connection (trust user, unix socket; on PGlite, its session) that runs one exchange at a time. */
export class RawConnection extends WireSocket {
  static async open(): Promise<RawConnection> {
    const { stream, user, database } = onPGlite ? { stream: await pgliteSessionStream(), user: 'postgres', database: 'postgres' } : await RawConnection.toServer()
    const c = new RawConnection(stream)
    c.send((w) =>
      fe.writeStartup(w, 196608, [
        ['user', user],
        ['database', database],
        ['client_encoding', 'UTF8'],
        ['DateStyle', 'ISO, MDY'],
        ['TimeZone', 'UTC'],
      ]),
    )
    await c.until('Z')
    return c
  }

  private static async toServer(): Promise<{ stream: ByteStream; user: string; database: string }> {
    const server = await getTestServer()
    return { stream: await WireSocket.socketTo(`${server.socketDir}/.s.PGSQL.${server.port}`), user: server.users.trust.user, database: server.database }
  }

  /** Reads messages up to and including one of type `type`; throws on ErrorResponse (after reading to ReadyForQuery). */
  async until(type: string): Promise<Msg[]> {
    const out: Msg[] = []
    let error: Error | null = null
    for (;;) {
      const m = await this.next()
      if (m.type === 'E') {
        const f = decodeErrorFields(m.body, 0, m.body.length)
        error = Object.assign(new Error(`${f.message} (SQLSTATE ${f.code})`), { code: f.code })
        continue
      }
      if (m.type === 'N' || m.type === 'S') continue
      out.push(m)
      if (m.type === 'Z') {
        if (error) throw error
        if (type === 'Z') return out
      }
      if (m.type === type && !error) return out
    }
  }

  /**
   * Runs `sql` with the given parameters (each: type OID, format, bytes or null)
   * and result format, returning the description and the raw fields of every row.
   */
  async run(
    sql: string,
    params: { oid: number; format: 0 | 1; value: Uint8Array | null }[],
    resultFormat: 0 | 1,
  ): Promise<{ fields: FieldDescription[]; paramTypes: number[]; rows: (Buffer | null)[][] }> {
    // Referenced only while waiting for a reply, so an idle shared connection lets the process exit.
    this.socket.ref?.()
    try {
      return await this.exchange(sql, params, resultFormat)
    } finally {
      this.socket.unref?.()
    }
  }

  private async exchange(
    sql: string,
    params: { oid: number; format: 0 | 1; value: Uint8Array | null }[],
    resultFormat: 0 | 1,
  ): Promise<{ fields: FieldDescription[]; paramTypes: number[]; rows: (Buffer | null)[][] }> {
    this.send((w) => {
      fe.writeParse(w, '', sql, params.map((p) => p.oid))
      fe.writeDescribe(w, 'S', '')
      const m = fe.beginBind(w, '', '', params.map((p) => p.format), params.length)
      for (const p of params) {
        if (p.value === null) w.i32(-1)
        else {
          w.i32(p.value.length)
          w.bytes(p.value)
        }
      }
      fe.endBind(w, m, [resultFormat])
      fe.writeExecuteSync(w)
    })
    const msgs = await this.until('Z')
    const t = msgs.find((m) => m.type === 't')
    const T = msgs.find((m) => m.type === 'T')
    const rows = msgs
      .filter((m) => m.type === 'D')
      .map((m) => {
        const n = m.body.readInt16BE(0)
        const out: (Buffer | null)[] = []
        let p = 2
        for (let i = 0; i < n; i++) {
          const len = m.body.readInt32BE(p)
          p += 4
          if (len < 0) out.push(null)
          else {
            out.push(m.body.subarray(p, p + len))
            p += len
          }
        }
        return out
      })
    return {
      fields: T ? decodeRowDescription(T.body, 0, T.body.length) : [],
      paramTypes: t ? decodeParameterDescription(t.body, 0, t.body.length) : [],
      rows,
    }
  }

  unref(): void {
    this.socket.unref?.()
  }

  async close(): Promise<void> {
    this.send(fe.writeTerminate)
    this.socket.end()
    await new Promise((r) => this.socket.once('close', r))
  }
}

let shared: Promise<RawConnection> | null = null

/** A raw connection shared by the tests of one file; it does not keep the process alive. */
export function rawConnection(): Promise<RawConnection> {
  shared ??= RawConnection.open().then((c) => {
    c.unref()
    return c
  })
  return shared
}

/** The bytes of `SELECT <expr>` in the given format (null for SQL NULL). */
export async function fetchValue(expr: string, format: 0 | 1): Promise<Buffer | null> {
  const c = await rawConnection()
  const { rows } = await c.run(`SELECT ${expr}`, [], format)
  return rows[0]![0]!
}

/**
 * Sends `bytes` as a parameter of type `oid` in `format` and returns how the
 * server prints it back (`$1::text`), so an encoder can be checked by what the
 * server understood.
 */
export async function echoParam(oid: number, format: 0 | 1, bytes: Uint8Array | null, expr = '$1::text'): Promise<string | null> {
  const c = await rawConnection()
  const { rows } = await c.run(`SELECT ${expr}`, [{ oid, format, value: bytes }], 0)
  const v = rows[0]![0]!
  return v === null ? null : v.toString('utf8')
}

/** Runs one statement for its effect (e.g. `SET TimeZone = 'Asia/Kolkata'`) on the shared raw connection. */
export async function runStatement(sql: string): Promise<void> {
  const c = await rawConnection()
  await c.run(sql, [], 0)
}
