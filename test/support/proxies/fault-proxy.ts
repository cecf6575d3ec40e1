// A TCP proxy in front of a real server that does to connections what networks
// do: cuts them after a given number of bytes (with an RST, or with a FIN after
// the truncated stream), delays every chunk, hands bytes over one at a time,
// swallows everything (a black hole), or refuses connections altogether. Every
// connection is recorded: when it was accepted, and the bytes that crossed it
// each way, so a clean session's stream can be read to pick cut points.

import * as net from 'node:net'
import { splitStream, type WireMessage } from './wire-split.js'

export type { WireMessage }

export type CutKind = 'reset' | 'fin'

/** What the proxy does to one connection. An empty plan relays faithfully. */
export interface FaultPlan {
  /** Cut once this many bytes from the server have been handed to the client. */
  serverCutAt?: number
  /** Cut once this many bytes from the client have been handed to the server. */
  clientCutAt?: number
  /**
   * How a cut looks: 'reset' sends the client an RST (the server sees its
   * connection close after the bytes it got); 'fin' closes both sides in
   * order after the truncated stream. Default 'reset'.
   */
  cut?: CutKind
  /** Cut (RST to the client) this many ms after the connection was accepted. */
  resetAfterMs?: number
  /** Delay of every chunk, both ways, in ms (order is kept). */
  delayMs?: number
  /** Hands every byte over on its own, one per turn of the event loop, both ways. */
  bytewise?: boolean
  /** Accepts the connection and never relays a byte either way (no connection to the server is made). */
  blackhole?: boolean
}

export interface ProxiedConnection {
  readonly index: number
  /** performance.now() when the proxy accepted it. */
  readonly acceptedAt: number
  readonly plan: FaultPlan
  /** What reached the client from the server, chunk by chunk. */
  readonly toClient: Buffer[]
  /** What reached the server from the client. */
  readonly toServer: Buffer[]
  /** Set once the connection was cut or closed. */
  readonly closed: boolean
  /** The proxy's port on its connection to the server (the server's client_port), once connected. */
  readonly serverSidePort: number | undefined
  /** From now on nothing more is relayed either way; both sockets stay open. */
  stall(): void
  /**
   * As stall(), and the proxy stops reading too: what the client writes fills
   * the kernel's buffers until its writes no longer drain, as with a peer that
   * stopped acknowledging.
   */
  freeze(): void
  /** Sends the client an RST and closes the server side. */
  reset(): void
}

export interface FaultProxy {
  readonly host: string
  readonly port: number
  /** Every connection accepted so far, in order. */
  readonly connections: readonly ProxiedConnection[]
  /** The plan for each new connection, by its index. */
  plan: (index: number) => FaultPlan
  /** Black-holes every open connection. */
  stallAll(): void
  /** Resets every open connection. */
  resetAll(): void
  /** Stops listening: connection attempts are refused (ECONNREFUSED) until accept(). Open connections go on. */
  refuse(): Promise<void>
  /** Listens again, on the same port. */
  accept(): Promise<void>
  close(): Promise<void>
}

const END = Symbol('end')
const CLOSE = Symbol('close')
const CUT = Symbol('cut')
type Item = Buffer | typeof END | typeof CLOSE | typeof CUT

/** Concatenates what crossed one way. */
export function joined(chunks: readonly Buffer[]): Buffer {
  return Buffer.concat(chunks)
}

class Relayed implements ProxiedConnection {
  readonly toClient: Buffer[] = []
  readonly toServer: Buffer[] = []
  /** Cut by the plan or by reset(): nothing more is relayed. */
  private cutDone = false
  private stalled = false
  private readonly sockets: net.Socket[]
  serverSidePort: number | undefined

  constructor(
    readonly index: number,
    readonly acceptedAt: number,
    readonly plan: FaultPlan,
    private readonly client: net.Socket,
    private readonly upstream: net.Socket | null,
  ) {
    this.sockets = upstream === null ? [client] : [client, upstream]
    for (const s of this.sockets) {
      s.setNoDelay(true)
      // A peer that resets is what these tests are about; it is not a failure of the proxy.
      s.on('error', () => undefined)
    }
    if (upstream === null) {
      client.on('data', () => undefined)
      client.on('end', () => client.end())
      return
    }
    upstream.once('connect', () => (this.serverSidePort = upstream.localPort))
    this.direction(client, upstream, plan.clientCutAt, this.toServer)
    this.direction(upstream, client, plan.serverCutAt, this.toClient)
    if (plan.resetAfterMs !== undefined) {
      const t = setTimeout(() => this.reset(), plan.resetAfterMs)
      client.on('close', () => clearTimeout(t))
    }
  }

  get closed(): boolean {
    return this.cutDone || this.sockets.every((s) => s.destroyed)
  }

  private direction(from: net.Socket, to: net.Socket, limit: number | undefined, record: Buffer[]): void {
    const plan = this.plan
    let accepted = 0
    let done = false
    const queue: Item[] = []
    let pumping = false

    const deliver = (item: Item, then: () => void): void => {
      if (item === CUT) return this.cutNow(to === this.client ? 'server' : 'client')
      if (this.cutDone) return then()
      if (item === END) {
        to.end()
        return then()
      }
      if (item === CLOSE) {
        to.destroy()
        return then()
      }
      record.push(item)
      // The cut waits for the write to reach the kernel, so what came before it is really delivered.
      to.write(item, () => then())
    }

    // One byte per turn of the event loop, so that the reader sees it alone.
    const pump = (): void => {
      if (pumping) return
      const next = queue[0]
      if (next === undefined) return
      pumping = true
      let item: Item
      if (Buffer.isBuffer(next) && next.length > 1) {
        item = next.subarray(0, 1)
        queue[0] = next.subarray(1)
      } else {
        item = queue.shift()!
      }
      deliver(item, () => {
        setImmediate(() => {
          pumping = false
          pump()
        })
      })
    }

    // Ends and closes travel in order behind the data, through the same delay or queue.
    const enqueue = (item: Item): void => {
      if (plan.bytewise) {
        queue.push(item)
        pump()
      } else if ((plan.delayMs ?? 0) > 0) {
        setTimeout(() => deliver(item, () => undefined), plan.delayMs)
      } else {
        deliver(item, () => undefined)
      }
    }

    from.on('data', (chunk: Buffer) => {
      if (done || this.stalled || this.cutDone) return
      if (limit !== undefined) {
        const piece = chunk.subarray(0, Math.max(0, limit - accepted))
        accepted += piece.length
        if (piece.length > 0) enqueue(piece)
        if (accepted >= limit) {
          done = true
          enqueue(CUT)
        }
        return
      }
      enqueue(chunk)
    })
    from.on('end', () => {
      if (done) return
      // A peer leaving a black hole: nothing would ever close the other side, and its backend would linger.
      if (this.stalled) this.destroyAll()
      else enqueue(END)
    })
    // Passed on even through a black hole, so that no backend outlives the test.
    from.on('close', () => {
      if (!done) enqueue(CLOSE)
    })
    // A cut at 0 bytes happens as soon as the connection is there.
    if (limit === 0) {
      done = true
      enqueue(CUT)
    }
  }

  private cutNow(side: 'server' | 'client'): void {
    if (this.cutDone) return
    const kind = this.plan.cut ?? 'reset'
    if (kind === 'fin') {
      // What was written goes out first, then an orderly close on both sides.
      this.cutDone = true
      this.client.end()
      this.upstream?.end()
      setTimeout(() => this.destroyAll(), 1000).unref()
      return
    }
    if (side === 'client') {
      // The server gets exactly the bytes relayed so far, then an orderly close.
      this.cutDone = true
      this.upstream?.end()
      setTimeout(() => this.upstream?.destroy(), 1000).unref()
      this.resetClient()
      return
    }
    // A moment for the client to read what was delivered before the RST lands.
    this.cutDone = true
    setTimeout(() => {
      this.resetClient()
      this.upstream?.destroy()
    }, 2)
  }

  private resetClient(): void {
    if (!this.client.destroyed) this.client.resetAndDestroy()
  }

  stall(): void {
    this.stalled = true
  }

  freeze(): void {
    this.stalled = true
    for (const s of this.sockets) s.pause()
  }

  reset(): void {
    this.cutDone = true
    this.resetClient()
    this.upstream?.destroy()
  }

  private destroyAll(): void {
    for (const s of this.sockets) s.destroy()
  }
}

/** Starts a proxy to `target` on a free local port. `plan` picks what happens to each new connection. */
export async function startFaultProxy(
  target: { host: string; port: number },
  plan: FaultPlan | ((index: number) => FaultPlan) = {},
): Promise<FaultProxy> {
  const connections: Relayed[] = []
  let server: net.Server | null = null

  const onConnection = (client: net.Socket): void => {
    const index = connections.length
    const p = proxy.plan(index)
    const upstream = p.blackhole ? null : net.connect({ port: target.port, host: target.host, allowHalfOpen: true })
    connections.push(new Relayed(index, performance.now(), p, client, upstream))
  }

  const listen = async (port: number): Promise<number> => {
    // Half-open: a client's FIN is passed on in its turn, not answered by the proxy itself.
    const s = net.createServer({ allowHalfOpen: true }, onConnection)
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject)
      s.listen(port, '127.0.0.1', () => {
        s.off('error', reject)
        resolve()
      })
    })
    server = s
    return (s.address() as net.AddressInfo).port
  }

  const stopListening = async (): Promise<void> => {
    const s = server
    server = null
    if (s === null) return
    // close() stops accepting at once; its callback waits for the open connections, which go on.
    s.close()
    await new Promise<void>((resolve) => setImmediate(resolve))
  }

  const port = await listen(0)
  const proxy: FaultProxy = {
    host: '127.0.0.1',
    port,
    connections,
    plan: typeof plan === 'function' ? plan : () => plan,
    stallAll() {
      for (const c of connections) c.stall()
    },
    resetAll() {
      for (const c of connections) c.reset()
    },
    refuse: stopListening,
    async accept() {
      if (server === null) await listen(port)
    },
    async close() {
      await stopListening()
      for (const c of connections) c.reset()
    },
  }
  return proxy
}

// --- reading a recorded stream ------------------------------------------------

/** The messages of a recorded plaintext server stream. */
export function splitBackend(stream: Buffer): WireMessage[] {
  return splitStream(stream, 0)
}

/** The messages of a recorded plaintext client stream (the StartupMessage has no type byte). */
export function splitFrontend(stream: Buffer): WireMessage[] {
  return splitStream(stream, 1)
}

/** One TLS record (or the one-byte answer / 8-byte SSLRequest before them, as type 0). */
export interface TlsRecord {
  /** 22 handshake, 23 application data, 20 change cipher spec, 21 alert; 0 for what precedes TLS. */
  contentType: number
  start: number
  end: number
}

/** Splits a recorded TLS stream (after the `prefix` bytes of SSLRequest or its answer) into records. */
export function splitTls(stream: Buffer, prefix: number): TlsRecord[] {
  const out: TlsRecord[] = [{ contentType: 0, start: 0, end: prefix }]
  let at = prefix
  while (at + 5 <= stream.length) {
    const len = stream.readUInt16BE(at + 3)
    out.push({ contentType: stream[at]!, start: at, end: at + 5 + len })
    at += 5 + len
  }
  if (at !== stream.length) throw new Error(`recorded TLS stream ends inside a record (${at} of ${stream.length})`)
  return out
}
