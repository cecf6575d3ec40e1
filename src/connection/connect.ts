import type { Socket } from 'node:net'
import type { ConnectionConfig, HostAddress, TargetSessionAttrs } from '../config/types.js'
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
  // libpq's prefer-standby: look for a standby on every host first, then take any server.
  const passes: TargetSessionAttrs[] = config.targetSessionAttrs === 'prefer-standby' ? ['standby', 'any'] : [config.targetSessionAttrs]
  for (const target of passes) {
    for (const h of hosts) {
      try {
        return await connectHost(config, h, target, events)
      } catch (err) {
        if (err instanceof ConfigError) throw err
        failures.push({ host: h, err: err as Error })
      }
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

async function connectHost(config: ConnectionConfig, h: HostAddress, target: TargetSessionAttrs, events: ConnectionEvents): Promise<Connection> {
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
      return await attempt(config, h, tls, protocol, target, events)
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
  target: TargetSessionAttrs,
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
    close: (err, unsent) => {
      if (ready) events.close?.(err, unsent)
      else for (const req of unsent) req.fail(err ?? new ConnectionError('PG_CONNECTION_CLOSED', 'the connection closed before it was ready'), false)
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
    const unsuitable = checkTarget(conn, target, h)
    if (unsuitable) {
      // Leave politely (Terminate), as libpq does, then try the next host.
      await conn.end()
      throw unsuitable
    }
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

/**
 * target_session_attrs, decided from the in_hot_standby and
 * default_transaction_read_only ParameterStatus reports (PostgreSQL 14+).
 * Until this check existed the setting was accepted and silently ignored, so
 * read-write could land on a standby. libpq asks older servers with a query;
 * this layer runs no queries, so those get a clear error instead.
 */
function checkTarget(conn: Connection, target: TargetSessionAttrs, h: HostAddress): ConnectionError | undefined {
  if (target === 'any') return undefined
  const standbyParam = conn.serverParameters.in_hot_standby
  const readOnlyParam = conn.serverParameters.default_transaction_read_only
  if (standbyParam === undefined || readOnlyParam === undefined) {
    return new ConnectionError(
      'PG_UNSUPPORTED',
      `target_session_attrs=${target} needs PostgreSQL 14 or later: the server at ${describeHost(h)} does not report in_hot_standby`,
    )
  }
  const standby = standbyParam === 'on'
  const readOnly = standby || readOnlyParam === 'on'
  let why: string | undefined
  switch (target) {
    case 'read-write':
      if (readOnly) why = 'the session is read-only'
      break
    case 'read-only':
      if (!readOnly) why = 'the session is not read-only'
      break
    case 'primary':
      if (standby) why = 'the server is in hot standby mode'
      break
    case 'standby':
    case 'prefer-standby':
      if (!standby) why = 'the server is not in hot standby mode'
      break
  }
  if (why === undefined) return undefined
  return new ConnectionError('PG_CONNECTION_REFUSED', `server at ${describeHost(h)} does not match target_session_attrs=${target}: ${why}`)
}
