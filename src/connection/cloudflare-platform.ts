import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConfigError } from '../errors.js'
import { writeSSLRequest } from '../protocol/frontend.js'
import { Writer } from '../protocol/writer.js'
import { openCloudflareSocket } from './cloudflare-socket.js'
import { openCustomStream } from './custom-stream.js'
import type { SocketPlatform } from './platform.js'
import { describeHost, isUnixHost, readSslAnswer } from './transport.js'

// Connections on Cloudflare Workers: TCP through cloudflare:sockets, TLS by the
// socket's startTls() after the server's 'S' to SSLRequest. The runtime's TLS
// verifies the certificate chain against its own trust store and the host name,
// always, and takes no files: settings that ask for anything else are refused
// with a ConfigError before a connection is opened, never ignored.

const ORIGIN = 'cloudflare:sockets'

/** Settings this transport cannot honour, as a ConfigError naming the setting and the fix. */
export function checkCloudflareConfig(config: ConnectionConfig, h: HostAddress): void {
  if (isUnixHost(h.host)) {
    throw new ConfigError('host', `"${h.host}" is a unix-socket directory, which a Worker cannot reach: give the server's host name or address (with Hyperdrive, its binding's connectionString)`)
  }
  if (config.sslmode === 'disable') return
  if (h.hostaddr !== undefined && h.hostaddr !== h.host) {
    throw new ConfigError(
      'hostaddr',
      `Cloudflare Workers verify the server certificate against the name the socket is opened to, so hostaddr ${h.hostaddr} cannot stand in for "${h.host}" with TLS: ` +
        'remove hostaddr, or use sslmode=disable on a private network',
    )
  }
  if (config.sslnegotiation === 'direct') {
    throw new ConfigError('sslnegotiation', 'Cloudflare Workers cannot offer the ALPN protocol "postgresql" that direct TLS needs: use sslnegotiation=postgres (the default)')
  }
  const rootcert = config.sslrootcert
  if (rootcert !== undefined && rootcert !== 'system') {
    throw new ConfigError(
      'sslrootcert',
      `a Worker cannot read the sslrootcert file "${rootcert}": Cloudflare Workers verify the server certificate against the runtime's own trust store, always; ` +
        'remove sslrootcert (or set sslrootcert=system), and give the server a certificate from a publicly trusted authority, or connect through Hyperdrive',
    )
  }
  const files: [string, string | undefined][] = [
    ['sslcert', config.sslcert],
    ['sslkey', config.sslkey],
    ['sslcrl', config.sslcrl],
    ['sslkeylogfile', config.sslkeylogfile],
  ]
  for (const [setting, value] of files) {
    if (value !== undefined) throw new ConfigError(setting, `${setting} cannot be used in Cloudflare Workers: the runtime's TLS (startTls of cloudflare:sockets) takes no certificate, key or log files; remove ${setting}`)
  }
  if (config.tls !== undefined) throw new ConfigError('tls', 'the tls option (node:tls settings) cannot be used in Cloudflare Workers, whose TLS is the runtime\'s own; remove it')
  if (!config.sslsni) throw new ConfigError('sslsni', 'sslsni=0 cannot be honoured in Cloudflare Workers: the runtime\'s TLS always sends the host name; remove sslsni')
}

export const cloudflarePlatform: SocketPlatform = {
  name: 'Cloudflare Workers',
  open(config, h, attempt, register, purpose) {
    checkCloudflareConfig(config, h)
    // hostaddr (only without TLS, see above) is where to connect.
    const factory = () => openCloudflareSocket({ hostname: h.hostaddr ?? h.host, port: h.port })
    return openCustomStream(config, factory, h, attempt, register, purpose, undefined, ORIGIN)
  },
  reach: reachOverCloudflare,
}

/** A new connection's answer to SSLRequest: the server still answers (see liveness.ts). */
async function reachOverCloudflare(config: ConnectionConfig, h: HostAddress, timeout: number): Promise<void> {
  checkCloudflareConfig(config, h)
  let stream: ByteStream | undefined
  let settled = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeout} ms`)), timeout)
  })
  const ask = async (): Promise<void> => {
    const s = await openCloudflareSocket({ hostname: h.hostaddr ?? h.host, port: h.port })
    if (settled) return s.destroy()
    stream = s
    const w = new Writer(16)
    writeSSLRequest(w)
    s.write(w.take())
    await readSslAnswer(s, describeHost(h))
  }
  try {
    await Promise.race([ask(), deadline])
  } finally {
    settled = true
    clearTimeout(timer)
    stream?.destroy()
  }
}
