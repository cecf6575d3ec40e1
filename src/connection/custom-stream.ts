import type { ByteStream, StreamFactory } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConfigError, ConnectionError, PipegresError, ProtocolError } from '../errors.js'
import { writeSSLRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import { platform } from './platform.js'
import { describeHost, readSslAnswer, TlsRefused, tlsError, type TlsAttempt, type Transport } from './transport.js'

// A connection over the byte stream the `stream` option opens. The protocol
// runs over it exactly as over a socket of our own; TLS follows sslmode, by the
// stream's own startTls() where it has one (a runtime's TLS), else by node:tls
// over a Node Duplex (where the platform has node:tls: see platform.ts).

const METHODS = ['write', 'end', 'destroy', 'pause', 'resume', 'on', 'once', 'off'] as const

function isByteStream(value: unknown): value is ByteStream {
  if (typeof value !== 'object' || value === null) return false
  const o = value as Record<string, unknown>
  return METHODS.every((m) => typeof o[m] === 'function')
}

/** A Node Duplex that node:tls can wrap: it reads and pipes as streams do. */
function isNodeDuplex(s: ByteStream): boolean {
  const o = s as unknown as Record<string, unknown>
  return typeof o.read === 'function' && typeof o.pipe === 'function' && typeof o.unshift === 'function'
}

function canUpgrade(s: ByteStream): boolean {
  return typeof s.startTls === 'function' || (isNodeDuplex(s) && platform().wrapTls !== undefined)
}

export async function openCustomStream(
  config: ConnectionConfig,
  factory: StreamFactory,
  h: HostAddress,
  attempt: TlsAttempt,
  register: (s: ByteStream) => void,
  purpose: 'connection' | 'cancel',
  /** Aborted when the attempt gives up: see StreamTarget. */
  signal: AbortSignal | undefined,
  /** Who opens the streams, for messages: the `stream` option, or the runtime's socket API (cloudflare-socket.ts). */
  origin = 'the stream option',
): Promise<Transport> {
  const where = describeHost(h)
  let stream: unknown
  try {
    stream = await factory(signal === undefined ? { host: h.host, port: h.port, purpose } : { host: h.host, port: h.port, purpose, signal })
  } catch (err) {
    if (err instanceof PipegresError) throw err
    throw new ConnectionError('PG_CONNECTION_REFUSED', `${origin} could not open a stream to ${where}: ${(err as Error)?.message ?? String(err)}`, { cause: err })
  }
  if (!isByteStream(stream)) {
    throw new ConfigError('stream', `${origin} returned ${stream === null ? 'null' : typeof stream} for ${where}, not a byte stream (a Node Duplex, or an object with ${METHODS.join(', ')})`)
  }
  register(stream)
  const plain = (): Transport => ({ socket: stream, tls: false, authorized: false, mode: 'none', peerCertificate: undefined, reader: null })
  if (attempt === 'none') return plain()
  if (!canUpgrade(stream)) {
    // Nothing to encrypt with: prefer goes on in plaintext as it does after a refusal; the stronger modes must not.
    if (attempt === 'request-or-plain') return plain()
    stream.destroy()
    throw new TlsRefused(
      'PG_TLS',
      `sslmode=${config.sslmode} needs TLS, but the stream ${origin} opened for ${where} can neither startTls() nor be wrapped by node:tls ` +
        `(${isNodeDuplex(stream) ? `pipegres does not use node:tls on ${platform().name}` : 'it is not a Node Duplex'}); ` +
        'set sslmode=disable if the stream is private or encrypted already',
    )
  }
  if (attempt === 'direct') return upgrade(config, stream, h, 'direct', origin)

  const w = new Writer(64)
  writeSSLRequest(w)
  stream.write(w.take())
  const answer = await readSslAnswer(stream, where)
  if (answer === 0x4e /* N */) {
    if (attempt === 'request-or-plain') return plain()
    stream.destroy()
    throw new TlsRefused('PG_TLS', `server at ${where} does not support TLS, but sslmode=${config.sslmode} requires it`)
  }
  if (answer !== 0x53 /* S */) {
    stream.destroy()
    throw new ProtocolError(`server at ${where} answered SSLRequest with byte 0x${answer.toString(16).padStart(2, '0')}`)
  }
  return upgrade(config, stream, h, 'request', origin)
}

async function upgrade(config: ConnectionConfig, stream: ByteStream, h: HostAddress, mode: 'request' | 'direct', origin: string): Promise<Transport> {
  const where = describeHost(h)
  if (typeof stream.startTls === 'function') {
    const rootcert = config.sslrootcert
    const verifyHost = config.sslmode === 'verify-full' || rootcert === 'system'
    const verifyChain = verifyHost || config.sslmode === 'verify-ca' || rootcert !== undefined
    let secure: ByteStream
    try {
      secure = await stream.startTls({ servername: h.host, verifyChain, verifyHost, alpn: mode === 'direct' ? 'postgresql' : undefined })
    } catch (err) {
      stream.destroy()
      throw tlsError(err, where)
    }
    if (!isByteStream(secure)) throw new ConfigError('stream', `startTls() of the stream ${origin} opened did not resolve with a byte stream for ${where}`)
    // The runtime verified what was asked for, or failed above; no certificate reaches us, so no channel binding.
    return { socket: secure, tls: true, authorized: verifyChain, mode, peerCertificate: undefined, reader: null }
  }
  return platform().wrapTls!(config, stream, h, mode)
}
