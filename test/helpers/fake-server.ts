// A scripted PostgreSQL backend, for what a real server cannot be made to do:
// malformed messages, replies out of turn, handshakes that lie. Each test writes
// a script that reads the client's messages and answers with exact bytes.

import * as net from 'node:net'

export interface FrontendMessage {
  /** The type letter ('' for the untyped startup-phase messages). */
  type: string
  body: Buffer
}

/** Builds one backend message: type byte, length, body. */
export function msg(type: string, ...parts: (Buffer | number[] | string)[]): Buffer {
  const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p + '\0') : Buffer.isBuffer(p) ? p : Buffer.from(p))))
  const head = Buffer.alloc(5)
  head[0] = type.charCodeAt(0)
  head.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}

export function i32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

export function i16(n: number): Buffer {
  const b = Buffer.alloc(2)
  b.writeInt16BE(n)
  return b
}

export const authOk = (): Buffer => msg('R', i32(0))
export const readyForQuery = (status = 'I'): Buffer => msg('Z', Buffer.from(status))
export const parseComplete = (): Buffer => msg('1')
export const bindComplete = (): Buffer => msg('2')
export const noData = (): Buffer => msg('n')
export const parameterStatus = (k: string, v: string): Buffer => msg('S', k, v)
export const backendKeyData = (pid: number, key: Buffer = Buffer.from([1, 2, 3, 4])): Buffer => msg('K', i32(pid), key)
export const commandComplete = (tag: string): Buffer => msg('C', tag)
export const parameterDescription = (oids: number[]): Buffer => msg('t', i16(oids.length), ...oids.map(i32))

/** RowDescription of text-format columns of the given types (default text). */
export function rowDescription(columns: (string | [name: string, typeOid: number])[]): Buffer {
  const parts: Buffer[] = [i16(columns.length)]
  for (const c of columns) {
    const [name, oid] = typeof c === 'string' ? [c, 25] : c
    parts.push(Buffer.from(name + '\0'), i32(0), i16(0), i32(oid), i16(-1), i32(-1), i16(0))
  }
  return msg('T', ...parts)
}

/** DataRow of text values (null for NULL). */
export function dataRow(values: (string | null | Buffer)[]): Buffer {
  const parts: Buffer[] = [i16(values.length)]
  for (const v of values) {
    if (v === null) parts.push(i32(-1))
    else {
      const b = Buffer.isBuffer(v) ? v : Buffer.from(v)
      parts.push(i32(b.length), b)
    }
  }
  return msg('D', ...parts)
}

export function errorResponse(fields: Record<string, string>): Buffer {
  const parts: (Buffer | string)[] = []
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(k), v)
  parts.push(Buffer.from([0]))
  return msg('E', ...parts)
}

/** The usual end of a successful trust startup. */
export function startupOk(pid = 4242): Buffer {
  return Buffer.concat([
    authOk(),
    parameterStatus('server_version', '18.0'),
    parameterStatus('client_encoding', 'UTF8'),
    backendKeyData(pid),
    readyForQuery(),
  ])
}

/** One client connection as seen by the fake server. */
export class FakeConnection {
  private buf = Buffer.alloc(0)
  private waiter: (() => void) | null = null
  private ended = false
  /** Startup parameters the client sent. */
  startupParams: Record<string, string> = {}
  startupVersion = 0

  constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true)
    socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d])
      this.waiter?.()
    })
    socket.on('close', () => {
      this.ended = true
      this.waiter?.()
    })
    socket.on('error', () => {})
  }

  private async need(n: number): Promise<void> {
    while (this.buf.length < n) {
      if (this.ended) throw new Error('client closed the connection')
      await new Promise<void>((r) => (this.waiter = r))
      this.waiter = null
    }
  }

  /** Reads an untyped message (StartupMessage, SSLRequest, CancelRequest). */
  async readUntyped(): Promise<Buffer> {
    await this.need(4)
    const len = this.buf.readInt32BE(0)
    await this.need(len)
    const body = this.buf.subarray(4, len)
    this.buf = this.buf.subarray(len)
    return body
  }

  /** Reads the StartupMessage, answering 'N' to any SSLRequest first. */
  async readStartup(): Promise<Record<string, string>> {
    for (;;) {
      const body = await this.readUntyped()
      const code = body.readInt32BE(0)
      if (code === 80877103) {
        this.socket.write('N')
        continue
      }
      this.startupVersion = code
      const parts = body.subarray(4).toString().split('\0')
      for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) this.startupParams[parts[i]!] = parts[i + 1]!
      return this.startupParams
    }
  }

  async read(): Promise<FrontendMessage> {
    await this.need(5)
    const len = this.buf.readInt32BE(1)
    await this.need(1 + len)
    const m = { type: String.fromCharCode(this.buf[0]!), body: this.buf.subarray(5, 1 + len) }
    this.buf = this.buf.subarray(1 + len)
    return m
  }

  /** Reads messages up to and including the next Sync (or a Query, or Terminate). */
  async readUntilSync(): Promise<FrontendMessage[]> {
    const out: FrontendMessage[] = []
    for (;;) {
      const m = await this.read()
      out.push(m)
      if (m.type === 'S' || m.type === 'Q' || m.type === 'X') return out
    }
  }

  /** Completes a trust startup. */
  async acceptStartup(pid?: number): Promise<void> {
    await this.readStartup()
    this.write(startupOk(pid))
  }

  write(...chunks: Buffer[]): void {
    if (!this.socket.destroyed) this.socket.write(Buffer.concat(chunks))
  }

  /** Writes bytes one at a time, each in its own TCP segment as far as Nagle allows. */
  async writeSlowly(data: Buffer, delayMs = 0): Promise<void> {
    for (const b of data) {
      if (this.socket.destroyed) return
      this.socket.write(Buffer.of(b))
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs))
      else await new Promise((r) => setImmediate(r))
    }
  }

  get closed(): boolean {
    return this.ended
  }

  /** Resolves when the client closes its side. */
  async waitClosed(): Promise<void> {
    while (!this.ended) {
      await new Promise<void>((r) => (this.waiter = r))
      this.waiter = null
    }
  }
}

export interface FakeServer {
  port: number
  /** Options to connect to it without TLS. */
  options: { host: string; port: number; user: string; database: string; sslmode: 'disable' }
  /** Errors thrown by scripts (a script failing is a test failure). */
  errors: unknown[]
  close(): Promise<void>
}

/** Starts a fake server that runs `script` for every connection. */
export async function fakeServer(script: (c: FakeConnection) => Promise<void>): Promise<FakeServer> {
  const sockets = new Set<net.Socket>()
  const errors: unknown[] = []
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    const conn = new FakeConnection(socket)
    script(conn).catch((err: unknown) => {
      if (!conn.closed) errors.push(err)
      socket.destroy()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as net.AddressInfo).port
  return {
    port,
    options: { host: '127.0.0.1', port, user: 'u', database: 'd', sslmode: 'disable' },
    errors,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
