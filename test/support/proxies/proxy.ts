// A TCP proxy in front of a real server, for what the network does to a
// connection: latency, and a record of the bytes that crossed it.

import * as net from 'node:net'

export interface ProxyOptions {
  /** Delay applied to every chunk in each direction, in ms. */
  delayMs?: number
  /** Called with every chunk the server sends. */
  onServerData?: (chunk: Buffer) => void
  /** Called with every chunk the client sends. */
  onClientData?: (chunk: Buffer) => void
}

export interface Proxy {
  host: string
  port: number
  close(): Promise<void>
}

function relay(from: net.Socket, to: net.Socket, delayMs: number, tap?: (chunk: Buffer) => void): void {
  from.on('data', (chunk) => {
    tap?.(chunk)
    if (delayMs > 0) setTimeout(() => to.destroyed || to.write(chunk), delayMs)
    else to.write(chunk)
  })
  from.on('end', () => setTimeout(() => to.end(), delayMs))
  from.on('error', () => to.destroy())
  from.on('close', () => setTimeout(() => to.destroy(), delayMs))
}

export async function startProxy(target: { host: string; port: number }, opts: ProxyOptions = {}): Promise<Proxy> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    for (const s of [client, upstream]) {
      s.setNoDelay(true)
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
    }
    relay(client, upstream, opts.delayMs ?? 0, opts.onClientData)
    relay(upstream, client, opts.delayMs ?? 0, opts.onServerData)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
