import type { ByteStream, StartTlsOptions, StreamFactory, StreamTarget } from '../config/byte-stream.js'
import { ConfigError, ConnectionError } from '../errors.js'

// A ByteStream over a socket of Cloudflare Workers' `connect()` (the
// `cloudflare:sockets` module): its ReadableStream and WritableStream become
// the events and calls a connection expects of a Node socket.
//
// - Reading runs only while resumed: one read() at a time, and none while
//   paused, so that after the server's one-byte answer to SSLRequest (the
//   reader pauses at once) nothing of the TLS handshake is read as plaintext,
//   and the reader's lock can be released for startTls(). A chunk whose read
//   was already under way when pause() came is held until resume().
// - write() hands the bytes to the WritableStream at once and returns false
//   while more than WRITE_HIGH_WATER bytes wait in it; 'drain' follows when
//   they are written.
// - 'close' comes exactly once: at the end of the server's data, after an
//   error ('error' first), or after destroy().
//
// cloudflare:sockets is loaded with import() of a name bundlers do not follow,
// so a bundle for Node never needs it, and in a Worker the runtime provides it.

/** Bytes waiting in the WritableStream before write() asks the writer to wait for 'drain'. */
const WRITE_HIGH_WATER = 64 * 1024

/** The parts of a cloudflare:sockets Socket used here. */
export interface CfSocket {
  readonly readable: ReadableStream<Uint8Array>
  readonly writable: WritableStream<Uint8Array>
  readonly opened: Promise<unknown>
  readonly closed: Promise<void>
  close(): Promise<void>
  startTls(): CfSocket
}

export type CfConnect = (address: { hostname: string; port: number }, options?: { secureTransport?: 'off' | 'on' | 'starttls'; allowHalfOpen?: boolean }) => CfSocket

type Listener = (...args: any[]) => void

/** True when this code runs in Cloudflare's workerd (Workers, wrangler dev, Miniflare). */
export function onWorkerd(): boolean {
  const nav = (globalThis as { navigator?: { userAgent?: unknown } }).navigator
  return nav?.userAgent === 'Cloudflare-Workers'
}

// A variable, not a literal: bundlers leave import() of it alone.
const SOCKETS_MODULE = 'cloudflare:sockets'
let loaded: Promise<CfConnect> | undefined

/** The runtime's connect(), loaded on first use. */
export function cloudflareConnect(): Promise<CfConnect> {
  loaded ??= (import(SOCKETS_MODULE) as Promise<{ connect: CfConnect }>).then(
    (m) => m.connect,
    (err: unknown) => {
      loaded = undefined
      throw new ConfigError(
        'stream',
        `cloudflare:sockets is not available (${(err as Error)?.message ?? String(err)}): the Cloudflare transport runs only in Cloudflare Workers (workerd); ` +
          "elsewhere import 'pipegres' without it",
        { cause: err },
      )
    },
  )
  return loaded
}

class CloudflareStream implements ByteStream {
  readonly #socket: CfSocket
  /** The host name the socket was opened to: the only name its TLS verifies the certificate against. */
  readonly #hostname: string
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>
  readonly #listeners = new Map<string, Listener[]>()
  #flowing = false
  #reading = false
  /** A chunk read after pause(), delivered on resume(). */
  #held: Uint8Array | null = null
  #queued = 0
  #needDrain = false
  #done = false
  /** Set once the socket was handed to startTls(): what the old socket does after that is not this stream's. */
  #upgraded = false

  constructor(socket: CfSocket, hostname: string) {
    this.#socket = socket
    this.#hostname = hostname
    this.#reader = socket.readable.getReader()
    this.#writer = socket.writable.getWriter()
    socket.closed.then(
      () => this.#finish(null),
      (err: unknown) => this.#finish(err),
    )
  }

  write(chunk: Uint8Array): boolean {
    if (this.#done || this.#upgraded) return true
    const n = chunk.length
    this.#queued += n
    this.#writer.write(chunk).then(
      () => {
        this.#queued -= n
        if (this.#needDrain && this.#queued <= WRITE_HIGH_WATER && !this.#done) {
          this.#needDrain = false
          this.#emit('drain')
        }
      },
      (err: unknown) => this.#finish(err),
    )
    if (this.#queued <= WRITE_HIGH_WATER) return true
    this.#needDrain = true
    return false
  }

  end(): void {
    if (this.#done || this.#upgraded) return
    // Half-closes: the server sees the end, and its own close ends the reading.
    this.#writer.close().catch((err: unknown) => this.#finish(err))
  }

  destroy(error?: Error): void {
    if (this.#done || this.#upgraded) return
    this.#finish(error ?? null)
  }

  pause(): void {
    this.#flowing = false
  }

  resume(): void {
    if (this.#done || this.#upgraded) return
    this.#flowing = true
    const held = this.#held
    if (held !== null) {
      this.#held = null
      this.#emit('data', held)
    }
    if (!this.#reading && this.#flowing && !this.#done) void this.#pump()
  }

  on(event: string, listener: Listener): this {
    const list = this.#listeners.get(event)
    if (list === undefined) this.#listeners.set(event, [listener])
    else list.push(listener)
    return this
  }

  once(event: string, listener: Listener): this {
    const wrapped: Listener & { listener?: Listener } = (...args: unknown[]) => {
      this.off(event, wrapped)
      listener(...args)
    }
    wrapped.listener = listener
    return this.on(event, wrapped)
  }

  off(event: string, listener: Listener): this {
    const list = this.#listeners.get(event)
    if (list === undefined) return this
    const i = list.findIndex((l) => l === listener || (l as { listener?: Listener }).listener === listener)
    if (i >= 0) list.splice(i, 1)
    return this
  }

  /**
   * The runtime's TLS over this connection, after the server said 'S' to
   * SSLRequest. Workers verify the chain against the runtime's trust store and
   * the certificate against the host name the socket was opened to, always:
   * they cannot do less, whatever the sslmode asks, nor check another name
   * (workerd refuses startTls's expectedServerHostname option).
   */
  async startTls(options: StartTlsOptions): Promise<ByteStream> {
    if (options.alpn !== undefined) {
      throw new ConfigError('sslnegotiation', 'Cloudflare Workers cannot offer the ALPN protocol "postgresql" that direct TLS needs: use sslnegotiation=postgres (the default)')
    }
    if (options.servername !== this.#hostname) {
      throw new ConfigError(
        'hostaddr',
        `Cloudflare Workers verify the server certificate against the name the socket was opened to ("${this.#hostname}"), not "${options.servername}": ` +
          'open it to the host name (drop hostaddr), or use sslmode=disable on a private network',
      )
    }
    if (this.#done) throw new ConnectionError('PG_CONNECTION_CLOSED', 'the connection closed before TLS could start')
    this.#upgraded = true
    this.#flowing = false
    this.#reader.releaseLock()
    this.#writer.releaseLock()
    const secure = new CloudflareStream(this.#socket.startTls(), this.#hostname)
    // The handshake's outcome: a certificate the runtime does not trust, or a name that does not match, fails here.
    let onError!: (err: Error) => void
    let onClose!: () => void
    const ended = new Promise<never>((_, reject) => {
      onError = reject
      onClose = () => reject(new ConnectionError('PG_CONNECTION_CLOSED', 'the connection closed during the TLS handshake'))
    })
    secure.once('error', onError).once('close', onClose)
    try {
      await Promise.race([secure.#socket.opened, ended])
    } catch (err) {
      secure.destroy()
      throw err
    } finally {
      secure.off('error', onError).off('close', onClose)
    }
    return secure
  }

  async #pump(): Promise<void> {
    this.#reading = true
    try {
      while (this.#flowing && !this.#done && !this.#upgraded) {
        const { done, value } = await this.#reader.read()
        if (this.#done || this.#upgraded) return
        if (done) {
          this.#finish(null)
          return
        }
        if (value.length === 0) continue
        if (this.#flowing) this.#emit('data', value)
        else this.#held = value
      }
    } catch (err) {
      if (!this.#upgraded) this.#finish(err)
    } finally {
      this.#reading = false
    }
  }

  /** Closes the socket and reports it: 'error' (when there is one), then 'close', once. */
  #finish(err: unknown): void {
    if (this.#done || this.#upgraded) return
    this.#done = true
    this.#flowing = false
    this.#reader.cancel().catch(() => {})
    this.#writer.abort().catch(() => {})
    this.#socket.close().catch(() => {})
    // Later, as Node does, so that a caller of destroy() finishes its own step first.
    queueMicrotask(() => {
      if (err !== null) this.#emit('error', err instanceof Error ? err : new Error(String(err)))
      this.#emit('close')
      this.#listeners.clear()
    })
  }

  #emit(event: string, ...args: unknown[]): void {
    const list = this.#listeners.get(event)
    if (list === undefined) return
    for (const l of [...list]) l(...args)
  }
}

/** Opens a socket of the runtime to the target; resolves once it is connected. */
export async function openCloudflareSocket(target: { hostname: string; port: number }): Promise<ByteStream> {
  const connect = await cloudflareConnect()
  // starttls from the start: whether TLS follows is decided by the server's answer to SSLRequest.
  const socket = connect(target, { secureTransport: 'starttls', allowHalfOpen: false })
  try {
    await socket.opened
  } catch (err) {
    socket.close().catch(() => {})
    throw err
  }
  return new CloudflareStream(socket, target.hostname)
}

/**
 * The `stream` option for Cloudflare Workers: connections (and cancel
 * requests) over the runtime's own TCP sockets, TLS by its startTls().
 * pipegres uses it by itself in a Worker; give it explicitly to choose it.
 */
export const cloudflareStream: StreamFactory = (target: StreamTarget) => openCloudflareSocket({ hostname: target.host, port: target.port })
