// A deliberately tiny PostgreSQL client: StartupMessage, trust authentication,
// simple Query, text results. The harness uses it to create roles and check the
// server without depending on the client under test, and tests may use it for
// out-of-band checks (pg_stat_activity, pg_terminate_backend) that must not be
// affected by the bugs they hunt.

import { connect, type Socket } from 'node:net'

export type BootstrapTarget = { path: string } | { host: string; port: number }

export interface BootstrapOptions {
  user: string
  database?: string
  /** Milliseconds for connecting and for each query; default 10 s. */
  timeoutMs?: number
}

export interface BootstrapResult {
  /** Rows of the last statement that returned rows, values in text format. */
  rows: (string | null)[][]
  /** Command tags in the order the server sent them. */
  commands: string[]
  notices: string[]
}

export class BootstrapError extends Error {
  /** SQLSTATE when the server sent an ErrorResponse. */
  readonly code: string | undefined

  constructor(message: string, code?: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'BootstrapError'
    this.code = code
  }
}

interface Pending {
  resolve: (result: BootstrapResult) => void
  reject: (error: Error) => void
  result: BootstrapResult
  error: BootstrapError | undefined
  timer: NodeJS.Timeout
}

const PROTOCOL_3_0 = 196608

export class BootstrapConnection {
  private buffer: Buffer = Buffer.alloc(0)
  private pending: Pending | undefined
  private closedError: Error | undefined

  private constructor(
    private readonly socket: Socket,
    private readonly timeoutMs: number,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('error', (err) => this.fail(new BootstrapError(`bootstrap connection failed: ${err.message}`, undefined, { cause: err })))
    socket.on('close', () => this.fail(new BootstrapError('bootstrap connection closed by the server')))
  }

  static async open(target: BootstrapTarget, options: BootstrapOptions): Promise<BootstrapConnection> {
    const timeoutMs = options.timeoutMs ?? 10_000
    const socket = connect('path' in target ? { path: target.path } : { host: target.host, port: target.port })
    const conn = new BootstrapConnection(socket, timeoutMs)
    const params = ['user', options.user, 'database', options.database ?? options.user, 'client_encoding', 'UTF8']
    const body = Buffer.from(params.map((p) => `${p}\0`).join('') + '\0', 'utf8')
    const startup = Buffer.alloc(8 + body.length)
    startup.writeInt32BE(startup.length, 0)
    startup.writeInt32BE(PROTOCOL_3_0, 4)
    body.copy(startup, 8)
    try {
      await conn.exchange(startup)
    } catch (err) {
      socket.destroy()
      throw err
    }
    return conn
  }

  /** Runs one simple Query (several statements allowed) and resolves at ReadyForQuery; rejects on ErrorResponse. */
  query(sql: string): Promise<BootstrapResult> {
    const text = Buffer.from(sql + '\0', 'utf8')
    const message = Buffer.alloc(5 + text.length)
    message[0] = 0x51 // 'Q'
    message.writeInt32BE(4 + text.length, 1)
    text.copy(message, 5)
    return this.exchange(message)
  }

  /** Sends Terminate and waits for the server to close the connection. */
  async close(): Promise<void> {
    if (this.socket.destroyed) return
    const closed = new Promise<void>((resolve) => this.socket.once('close', () => resolve()))
    this.socket.end(Buffer.from([0x58, 0, 0, 0, 4])) // 'X'
    const timer = setTimeout(() => this.socket.destroy(), this.timeoutMs)
    await closed
    clearTimeout(timer)
  }

  private exchange(message: Buffer): Promise<BootstrapResult> {
    if (this.closedError) return Promise.reject(this.closedError)
    if (this.pending) return Promise.reject(new BootstrapError('bootstrap connection is busy'))
    return new Promise<BootstrapResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(new BootstrapError(`bootstrap connection timed out after ${this.timeoutMs} ms`))
        this.socket.destroy()
      }, this.timeoutMs)
      this.pending = { resolve, reject, result: { rows: [], commands: [], notices: [] }, error: undefined, timer }
      this.socket.write(message)
    })
  }

  private fail(error: Error): void {
    this.closedError ??= error
    const pending = this.pending
    if (!pending) return
    this.pending = undefined
    clearTimeout(pending.timer)
    // An ErrorResponse during startup is followed by the server closing: report the server's reason.
    pending.reject(pending.error ?? error)
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk])
    while (this.buffer.length >= 5) {
      const length = this.buffer.readInt32BE(1)
      if (this.buffer.length < 1 + length) return
      const type = this.buffer[0]!
      const body = this.buffer.subarray(5, 1 + length)
      this.buffer = this.buffer.subarray(1 + length)
      this.onMessage(type, body)
    }
  }

  private onMessage(type: number, body: Buffer): void {
    const pending = this.pending
    switch (String.fromCharCode(type)) {
      case 'R': {
        const method = body.readInt32BE(0)
        if (method !== 0) {
          this.fail(new BootstrapError(`server asked for authentication method ${method}; the bootstrap client supports trust only`))
          this.socket.destroy()
        }
        return
      }
      case 'T':
        if (pending) pending.result.rows = []
        return
      case 'D': {
        if (!pending) return
        const count = body.readInt16BE(0)
        const row: (string | null)[] = []
        let at = 2
        for (let i = 0; i < count; i++) {
          const len = body.readInt32BE(at)
          at += 4
          if (len < 0) {
            row.push(null)
          } else {
            row.push(body.toString('utf8', at, at + len))
            at += len
          }
        }
        pending.result.rows.push(row)
        return
      }
      case 'C':
        pending?.result.commands.push(body.toString('utf8', 0, body.length - 1))
        return
      case 'N':
        pending?.result.notices.push(formatFields(parseFields(body)))
        return
      case 'E': {
        const fields = parseFields(body)
        const error = new BootstrapError(formatFields(fields), fields.get('C'))
        if (pending) pending.error ??= error
        else this.fail(error)
        return
      }
      case 'Z': {
        if (!pending) return
        this.pending = undefined
        clearTimeout(pending.timer)
        if (pending.error) pending.reject(pending.error)
        else pending.resolve(pending.result)
        return
      }
      default:
        // ParameterStatus, BackendKeyData, NoticeResponse, EmptyQueryResponse, NegotiateProtocolVersion: nothing to do.
        return
    }
  }
}

function parseFields(body: Buffer): Map<string, string> {
  const fields = new Map<string, string>()
  let at = 0
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at]!)
    const end = body.indexOf(0, at + 1)
    fields.set(code, body.toString('utf8', at + 1, end))
    at = end + 1
  }
  return fields
}

function formatFields(fields: Map<string, string>): string {
  const severity = fields.get('V') ?? fields.get('S') ?? 'ERROR'
  let text = `${severity}: ${fields.get('M') ?? '(no message)'}`
  const code = fields.get('C')
  if (code) text += ` (SQLSTATE ${code})`
  const detail = fields.get('D')
  if (detail) text += `\nDETAIL: ${detail}`
  const hint = fields.get('H')
  if (hint) text += `\nHINT: ${hint}`
  return text
}

/** Opens a connection, runs `sql`, closes. */
export async function runSql(target: BootstrapTarget, options: BootstrapOptions, sql: string): Promise<BootstrapResult> {
  const conn = await BootstrapConnection.open(target, options)
  try {
    return await conn.query(sql)
  } finally {
    await conn.close()
  }
}

/** A SQL string literal; standard_conforming_strings is on in every supported server. */
export function sqlLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/** A quoted SQL identifier. */
export function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
