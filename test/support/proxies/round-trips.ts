// A proxy that counts round trips instead of timing them. While counting, it
// holds the server's replies until the server has answered every Sync and
// simple Query the client sent; only then does it pass them on, and each such
// release is one round trip: the client got nothing back before it, so
// whatever it sent up to then it sent without waiting. A client that needs a
// reply before it can go on (a Describe before its Bind, say) shows up as a
// second release. Nothing depends on how busy the machine is.

import * as net from 'node:net'
import { MessageSplitter } from './wire-split.js'

export interface RoundTripProxy {
  host: string
  port: number
  /**
   * Runs `fn` with replies held and returns how many releases it took to
   * settle. Rejects, naming what is held and what the client sent, when `fn`
   * has not settled after `limitMs` (a client waiting on a reply this counter
   * never releases, such as one to a Flush).
   */
  count(fn: () => Promise<unknown>, limitMs?: number): Promise<number>
  close(): Promise<void>
}

const PROTOCOL_3 = 3

export async function startRoundTripProxy(target: { host: string; port: number }): Promise<RoundTripProxy> {
  const sockets = new Set<net.Socket>()
  let link: { client: net.Socket; upstream: net.Socket } | undefined
  let problem: string | undefined
  let holding = false
  let held: Buffer[] = []
  let unanswered = 0
  let releases = 0
  let sent: string[] = []

  const release = (): void => {
    for (const chunk of held) link?.client.write(chunk)
    held = []
  }

  const server = net.createServer((client) => {
    if (link) {
      problem = 'the client opened a second connection; this counter follows one'
      client.destroy()
      return
    }
    const upstream = net.connect(target.port, target.host)
    link = { client, upstream }
    for (const s of [client, upstream]) {
      s.setNoDelay(true)
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {})
    }
    const fromClient = new MessageSplitter(1)
    const fromServer = new MessageSplitter(0)
    client.on('data', (chunk: Buffer) => {
      fromClient.push(chunk, ({ type }, body) => {
        if (type === '') {
          if (body.readUInt16BE(0) !== PROTOCOL_3) problem = 'the client did not start with a plain startup message; connect with sslmode: "disable"'
          // The handshake ends with a ReadyForQuery too.
          unanswered++
          return
        }
        if (holding) sent.push(type)
        if (type === 'S' || type === 'Q') unanswered++
      })
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      let answered = false
      fromServer.push(chunk, ({ type }) => {
        if (type === 'Z') {
          unanswered--
          answered = true
        }
      })
      if (!holding) return void client.write(chunk)
      held.push(chunk)
      // A release only follows a ReadyForQuery that answers the last request:
      // a notice or notification arriving on its own waits with the rest.
      if (answered && unanswered === 0) {
        releases++
        release()
      }
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))

  return {
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    async count(fn, limitMs = 15_000) {
      if (holding) throw new Error('count() is already running')
      holding = true
      releases = 0
      sent = []
      let timer: NodeJS.Timeout | undefined
      try {
        const stuck = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            reject(new Error(`not settled after ${limitMs} ms: ${releases} releases, ${held.length} chunks held, ` +
              `${unanswered} Sync/Query unanswered, the client sent [${sent.join(' ')}]` + (problem ? `; ${problem}` : '')))
          }, limitMs)
        })
        await Promise.race([fn(), stuck])
        if (problem) throw new Error(problem)
        return releases
      } finally {
        clearTimeout(timer)
        holding = false
        release()
      }
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
