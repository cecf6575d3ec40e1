import type { Socket } from 'node:net'
import type { ConnectionConfig, HostAddress } from '../config/types.js'
import { ConfigError, ConnectionError, PgError } from '../errors.js'
import { Connection, type ConnectionEvents } from './connection.js'
import { describeHost, isUnixHost, openTransport, TlsRefused, type TlsAttempt } from './transport.js'

// Which hosts to try, in which order, with or without TLS, and with which
// protocol version; one Connection per attempt, the first that reaches
// ReadyForQuery wins. Each attempt has its own connect timeout, as in libpq.

function shuffle<T>(items: readonly T[]): T[] {
  const out = items.slice()
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** Opens a ready connection to the first host that accepts one. */
export async function openConnection(config: ConnectionConfig, events: ConnectionEvents): Promise<Connection> {
  const hosts = config.loadBalanceHosts === 'random' ? shuffle(config.hosts) : config.hosts
  const failures: { host: HostAddress; err: Error }[] = []
  for (const h of hosts) {
    try {
      return await connectHost(config, h, events)
    } catch (err) {
      if (err instanceof ConfigError) throw err
      failures.push({ host: h, err: err as Error })
    }
  }
  if (failures.length === 1) throw failures[0]!.err
  const last = failures[failures.length - 1]!.err
  const code = last instanceof ConnectionError ? last.code : 'PG_CONNECTION_REFUSED'
  const detail = failures.map((f) => `${describeHost(f.host)}: ${f.err.message}`).join('; ')
  throw new ConnectionError(code, `could not connect to any of ${failures.length} hosts: ${detail}`, {
    cause: new AggregateError(failures.map((f) => f.err)),
  })
}

async function connectHost(config: ConnectionConfig, h: HostAddress, events: ConnectionEvents): Promise<Connection> {
  const unix = isUnixHost(h.host)
  let attempts: TlsAttempt[]
  if (unix || config.sslmode === 'disable') attempts = ['none']
  else if (config.sslnegotiation === 'direct') attempts = ['direct']
  else if (config.sslmode === 'allow') attempts = ['none', 'request']
  else if (config.sslmode === 'prefer') attempts = ['request-or-plain', 'none']
  else attempts = ['request']

  let protocol = config.maxProtocolVersion
  let lastErr: Error | undefined
  for (let i = 0; i < attempts.length; i++) {
    const tls = attempts[i]!
    try {
      return await attempt(config, h, tls, protocol, events)
    } catch (err) {
      if (!(err instanceof Error)) throw err
      if (protocol === '3.2' && config.minProtocolVersion === '3.0' && isOldProtocolRejection(err)) {
        // A server from before NegotiateProtocolVersion existed refuses 3.2 outright.
        protocol = '3.0'
        i--
        continue
      }
      lastErr = err
      if (!retryWithout(tls, err)) throw err
    }
  }
  throw lastErr ?? new ConnectionError('PG_CONNECTION_REFUSED', `could not connect to ${describeHost(h)}`)
}

function isOldProtocolRejection(err: Error): boolean {
  return err instanceof PgError && err.code === '0A000' && /protocol/i.test(err.message)
}

/** libpq's fallbacks: prefer retries in plaintext after a TLS failure or a rejection over TLS; allow retries with TLS after a rejection. */
function retryWithout(tls: TlsAttempt, err: Error): boolean {
  if (err instanceof TlsRefused) return false
  if (tls === 'request-or-plain') return err instanceof PgError || (err instanceof ConnectionError && err.code === 'PG_TLS')
  if (tls === 'none') return err instanceof PgError
  return false
}

async function attempt(
  config: ConnectionConfig,
  h: HostAddress,
  tls: TlsAttempt,
  protocol: '3.0' | '3.2',
  events: ConnectionEvents,
): Promise<Connection> {
  let socket: Socket | undefined
  let conn: Connection | undefined
  let timer: NodeJS.Timeout | undefined
  let ready = false
  const guarded: ConnectionEvents = {
    notice: (f) => events.notice?.(f),
    notification: (n) => events.notification?.(n),
    parameterStatus: (k, v) => events.parameterStatus?.(k, v),
    // A failed attempt is not a closed connection as far as the owner knows.
    close: (err) => {
      if (ready) events.close?.(err)
    },
  }
  const deadline = new Promise<never>((_, reject) => {
    if (config.connectTimeout <= 0) return
    timer = setTimeout(() => {
      const err = new ConnectionError('PG_CONNECT_TIMEOUT', `timed out after ${config.connectTimeout} ms connecting to ${describeHost(h)}`)
      if (conn) conn.destroy(err)
      else socket?.destroy()
      reject(err)
    }, config.connectTimeout)
  })
  try {
    const transport = await Promise.race([openTransport(config, h, tls, (s) => (socket = s)), deadline])
    conn = new Connection(transport, config, h, protocol, guarded)
    await Promise.race([conn.ready(), deadline])
    ready = true
    return conn
  } catch (err) {
    if (conn) conn.destroy(err as Error)
    else socket?.destroy()
    throw err
  } finally {
    clearTimeout(timer)
  }
}
