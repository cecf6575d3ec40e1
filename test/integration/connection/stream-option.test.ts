// The stream option: connections over a byte stream the application opens
// (a Node Duplex, or any object with the ByteStream shape), with sslmode
// honoured over it (node:tls around a Duplex, or the stream's own startTls),
// a cancel request as a second stream, and clear errors for a bad factory.

import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { readFileSync } from 'node:fs'
import * as net from 'node:net'
import * as tls from 'node:tls'
import { describe, test } from 'node:test'
import { ConfigError, ConnectionError, connect, createPool, type ByteStream, type ClientOptions, type StartTlsOptions, type StreamTarget } from '../../../src/index.js'
import { getTestServer } from '../../support/servers/test-server.js'
import { isolateEnvironment, tcpOptions } from '../../support/connect.js'

const server = await getTestServer()
await isolateEnvironment('stream-option')
const who = server.users.scram

/** A socket to the test server, whatever host the client thinks it is talking to. */
function dial(): net.Socket {
  return net.connect({ host: server.host, port: server.port })
}

/** A ByteStream that is not a Node Duplex: node:tls cannot wrap it, so it brings its own startTls. */
class PlainStream extends EventEmitter implements ByteStream {
  upgrades: StartTlsOptions[] = []
  constructor(
    private socket: net.Socket,
    withTls: boolean,
  ) {
    super()
    this.attach(socket)
    if (withTls) this.startTls = this.upgrade
  }
  startTls?: (options: StartTlsOptions) => Promise<ByteStream>
  private attach(s: net.Socket): void {
    s.on('data', (c: Buffer) => this.emit('data', new Uint8Array(c.buffer, c.byteOffset, c.length)))
    s.on('drain', () => this.emit('drain'))
    s.on('error', (e: Error) => this.emit('error', e))
    s.on('close', () => this.emit('close'))
  }
  private async upgrade(options: StartTlsOptions): Promise<ByteStream> {
    this.upgrades.push(options)
    this.socket.removeAllListeners()
    const secure = tls.connect({ socket: this.socket, ca: readFileSync(server.tls.caFile), servername: 'localhost', rejectUnauthorized: options.verifyChain })
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve())
      secure.once('error', reject)
    })
    return secure
  }
  write(chunk: Uint8Array): boolean {
    return this.socket.write(chunk)
  }
  end(): void {
    this.socket.end()
  }
  destroy(): void {
    this.socket.destroy()
  }
  pause(): void {
    this.socket.pause()
  }
  resume(): void {
    this.socket.resume()
  }
}

function options(extra: ClientOptions): ClientOptions {
  // The host names what TLS verifies; the stream decides where the bytes go.
  return tcpOptions(server, who, { host: 'localhost', ...extra })
}

async function sslInUse(opts: ClientOptions): Promise<boolean> {
  const db = await connect(opts)
  try {
    return (await db.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0]!.ssl as boolean
  } finally {
    await db.end()
  }
}

describe('a Node Duplex', () => {
  test('carries a plain session, pipelined, and a pool opens one per connection', async () => {
    const targets: StreamTarget[] = []
    const stream = (t: StreamTarget) => {
      targets.push(t)
      return dial()
    }
    assert.equal(await sslInUse(options({ sslmode: 'disable', stream })), false)
    assert.deepEqual(
      targets.map(({ signal, ...t }) => ({ ...t, aborted: signal?.aborted })),
      [{ host: 'localhost', port: server.port, purpose: 'connection', aborted: false }],
    )
    const pool = createPool({ ...options({ sslmode: 'disable', stream }), max: 3 })
    try {
      const all = await Promise.all(Array.from({ length: 300 }, (_, i) => pool.query('SELECT $1::int AS i', [i])))
      all.forEach((r, i) => assert.equal(r.rows[0]!.i, i))
    } finally {
      await pool.end()
    }
  })

  test('is wrapped by node:tls for sslmode require and verify-full', async () => {
    assert.equal(await sslInUse(options({ sslmode: 'require', stream: dial })), true)
    assert.equal(await sslInUse(options({ sslmode: 'verify-full', sslrootcert: server.tls.caFile, stream: dial })), true)
    // verify-full still checks the name: the certificate does not name 127.0.0.1.
    const err = await connect(tcpOptions(server, who, { host: '127.0.0.1', sslmode: 'verify-full', sslrootcert: server.tls.caFile, stream: dial })).catch((e: unknown) => e)
    assert.ok(err instanceof ConnectionError && err.code === 'PG_TLS', String(err))
  })

  test('a timeout cancels the running query through a second stream', async () => {
    const purposes: string[] = []
    const db = await connect(options({ sslmode: 'disable', stream: (t) => (purposes.push(t.purpose), dial()) }))
    try {
      const started = performance.now()
      const err = await db.query('SELECT pg_sleep(30)', [], { timeout: 200 }).catch((e: unknown) => e)
      assert.ok(err instanceof Error, String(err))
      assert.ok(performance.now() - started < 20_000, 'the cancel reached the server')
      assert.deepEqual(purposes, ['connection', 'cancel'])
      assert.equal((await db.query('SELECT 1 AS one')).rows[0]!.one, 1)
    } finally {
      await db.end()
    }
  })
})

describe('a ByteStream that is not a Duplex', () => {
  test('runs plain, and upgrades through its startTls with the sslmode asked for', async () => {
    assert.equal(await sslInUse(options({ sslmode: 'disable', stream: () => new PlainStream(dial(), false) })), false)
    const made: PlainStream[] = []
    const stream = () => {
      const s = new PlainStream(dial(), true)
      made.push(s)
      return s
    }
    assert.equal(await sslInUse(options({ sslmode: 'require', stream })), true)
    assert.equal(await sslInUse(options({ sslmode: 'verify-full', sslrootcert: 'system', stream })), true)
    assert.deepEqual(
      made.map((s) => s.upgrades[0]),
      [
        { servername: 'localhost', verifyChain: false, verifyHost: false, alpn: undefined },
        { servername: 'localhost', verifyChain: true, verifyHost: true, alpn: undefined },
      ],
    )
  })

  test('without startTls: prefer goes on in plaintext, require is refused naming the cause', async () => {
    assert.equal(await sslInUse(options({ sslmode: 'prefer', stream: () => new PlainStream(dial(), false) })), false)
    const err = await connect(options({ sslmode: 'require', stream: () => new PlainStream(dial(), false) })).catch((e: unknown) => e)
    assert.ok(err instanceof ConnectionError && err.code === 'PG_TLS', String(err))
    assert.match(err.message, /startTls/)
  })
})

describe('a bad stream option', () => {
  test('is an error naming the setting or the failure, never a hang', async () => {
    // A socket where a factory belongs: the client refuses it without touching it, so it is closed here (left
    // open, it would keep this file's process alive until the server's authentication_timeout ends it).
    const socket = dial()
    const notFunction = await connect(options({ stream: socket as never })).catch((e: unknown) => e)
    socket.destroy()
    assert.ok(notFunction instanceof ConfigError && notFunction.setting === 'stream', String(notFunction))
    assert.match(notFunction.message, /function/)
    const notStream = await connect(options({ stream: () => ({}) as never })).catch((e: unknown) => e)
    assert.ok(notStream instanceof ConfigError && notStream.setting === 'stream', String(notStream))
    const throws = await connect(options({ stream: () => Promise.reject(new Error('tunnel down')) })).catch((e: unknown) => e)
    assert.ok(throws instanceof ConnectionError && /tunnel down/.test(throws.message), String(throws))
  })

  test('a factory still opening when the connect times out sees its signal aborted, and a stream it hands over later is closed', async () => {
    let signal: AbortSignal | undefined
    let late: net.Socket | undefined
    let handOver!: () => void
    const handed = new Promise<void>((resolve) => (handOver = resolve))
    const stream = async (t: StreamTarget) => {
      signal = t.signal
      // Slower than connectTimeout: a tunnel still coming up, say.
      await new Promise((resolve) => setTimeout(resolve, 300))
      late = dial()
      setImmediate(handOver)
      return late
    }
    const err = await connect(options({ sslmode: 'disable', connectTimeout: 50, stream })).catch((e: unknown) => e)
    assert.ok(err instanceof ConnectionError && err.code === 'PG_CONNECT_TIMEOUT', String(err))
    assert.equal(signal?.aborted, true, 'the factory was told the attempt gave up')
    await handed
    assert.equal(late?.destroyed, true, 'the stream handed over after the timeout was destroyed')
  })
})
