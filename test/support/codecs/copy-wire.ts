// A bare protocol connection for the COPY data-format tests: it runs COPY
// through the simple query protocol and hands over the CopyData payloads
// exactly as the server framed them (COPY TO STDOUT), or sends given bytes as
// CopyData (COPY FROM STDIN), so the format layer is checked against the real
// server without any COPY support in the client.

import { decodeErrorFields } from '../../../src/protocol/backend.js'
import * as fe from '../../../src/protocol/frontend.js'
import { connect, type Client } from '../../../src/index.js'
import { WireSocket, type Msg } from './raw-values.js'
import { getTestServer } from '../servers/test-server.js'

export interface CopyOut {
  /** Overall format of the CopyOutResponse: 0 text, 1 binary. */
  format: number
  columnFormats: number[]
  /** The body of every CopyData message, in order. */
  payloads: Buffer[]
  command: string
}

/** The managed server's unix socket and its superuser (trusted there): the wire connection and the client meet in the same database. */
async function target(): Promise<{ path: string; host: string; port: number; user: string; database: string }> {
  const server = await getTestServer()
  return { path: `${server.socketDir}/.s.PGSQL.${server.port}`, host: server.socketDir, port: server.port, user: server.superuser.user, database: server.database }
}

/** A client of the pipegres API on the same database as CopyWire. */
export async function sameDatabaseClient(): Promise<Client> {
  const t = await target()
  return connect({ host: t.host, port: t.port, user: t.user, database: t.database })
}

export class CopyWire extends WireSocket {
  /** Connects with the settings a pipegres session has, plus any given. */
  static async open(settings: [string, string][] = []): Promise<CopyWire> {
    const t = await target()
    const c = new CopyWire(await WireSocket.socketTo(t.path))
    c.send((w) =>
      fe.writeStartup(w, 196608, [['user', t.user], ['database', t.database], ['client_encoding', 'UTF8'], ['DateStyle', 'ISO, MDY'], ...settings]),
    )
    await c.until('Z')
    return c
  }

  /** Reads up to a message of `type`, or to ReadyForQuery; an ErrorResponse is thrown once ReadyForQuery has come. */
  private async until(type: string, seen: (m: Msg) => void = () => {}): Promise<Msg> {
    let error: Error | null = null
    for (;;) {
      const m = await this.next()
      if (m.type === 'E') {
        const f = decodeErrorFields(m.body, 0, m.body.length)
        error ??= Object.assign(new Error(`${f.message} (SQLSTATE ${f.code})${f.where ? ` [${f.where}]` : ''}`), { code: f.code })
        continue
      }
      if (m.type === 'Z') {
        if (error) throw error
        if (type === 'Z') return m
        throw new Error(`the server went idle without sending message ${type}`)
      }
      if (m.type === type && error === null) return m
      seen(m)
    }
  }

  /** Runs statements for their effect. */
  async exec(sql: string): Promise<void> {
    this.send((w) => fe.writeQuery(w, sql))
    await this.until('Z')
  }

  /** Runs a COPY ... TO STDOUT and returns its CopyData payloads. */
  async copyOut(sql: string): Promise<CopyOut> {
    this.send((w) => fe.writeQuery(w, sql))
    const head = await this.until('H')
    const format = head.body[0]!
    const n = head.body.readInt16BE(1)
    const columnFormats = Array.from({ length: n }, (_, i) => head.body.readInt16BE(3 + 2 * i))
    const payloads: Buffer[] = []
    let command = ''
    await this.until('Z', (m) => {
      if (m.type === 'd') payloads.push(m.body)
      else if (m.type === 'C') command = m.body.toString('utf8', 0, m.body.length - 1)
    })
    return { format, columnFormats, payloads, command }
  }

  /** Runs a COPY ... FROM STDIN, sending each chunk as one CopyData message; resolves with the command tag. */
  async copyIn(sql: string, chunks: readonly Uint8Array[]): Promise<string> {
    this.send((w) => fe.writeQuery(w, sql))
    await this.until('G')
    this.send((w) => {
      for (const c of chunks) fe.writeCopyData(w, c)
      fe.writeCopyDone(w)
    })
    let command = ''
    await this.until('Z', (m) => {
      if (m.type === 'C') command = m.body.toString('utf8', 0, m.body.length - 1)
    })
    return command
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.send(fe.writeTerminate)
    this.socket.end()
    await new Promise((r) => this.socket.once('close', r))
  }
}
