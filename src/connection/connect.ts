import type { ByteStream } from '../config/byte-stream.js'
import type { ConnectionConfig, HostAddress, TargetSessionAttrs } from '../config/types.js'
import { ConfigError, ConnectionError, PgError } from '../errors.js'
import { Codes } from '../protocol/sql-state-codes.js'
import { Connection } from './connection.js'
import type { ConnectionEvents } from './connection-events.js'
import { openTransport } from './open.js'
import { describeHost, isUnixHost, TlsRefused, type TlsAttempt } from './transport.js'

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
  // By host: prefer-standby's second pass tries a host again, and its latest error is the one to report.
  const failures = new Map<string, { host: HostAddress; err: Error }>()
  // libpq's prefer-standby: look for a standby on every host first, then take any server.
  const passes: TargetSessionAttrs[] = config.targetSessionAttrs === 'prefer-standby' ? ['standby', 'any'] : [config.targetSessionAttrs]
  for (const target of passes) {
    for (const h of hosts) {
      try {
        return await connectHost(config, h, target, events)
      } catch (err) {
        if (err instanceof ConfigError) throw err
        const where = describeHost(h)
        failures.delete(where)
        failures.set(where, { host: h, err: err as Error })
      }
    }
  }
  const failed = [...failures.values()]
  if (failed.length === 1) throw failed[0]!.err
  const last = failed[failed.length - 1]!.err
  const code = last instanceof ConnectionError ? last.code : 'PG_CONNECTION_REFUSED'
  const detail = failed.map((f) => `${describeHost(f.host)}: ${f.err.message}`).join('; ')
  throw new ConnectionError(code, `could not connect to any of ${failed.length} hosts: ${detail}`, {
    cause: new AggregateError(failed.map((f) => f.err)),
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

  const where = describeHost(h)
  let protocol = config.maxProtocolVersion === '3.2' && config.minProtocolVersion === '3.0' && (refusedNewer.get(where) ?? 0) > performance.now() ? '3.0' : config.maxProtocolVersion
  let lastErr: Error | undefined
  // Why this host was asked again for 3.0: a refusal, or a close without a word.
  let fellBack: 'refused' | 'closed' | null = null
  for (let i = 0; i < attempts.length; i++) {
    const tls = attempts[i]!
    try {
      const conn = await attempt(config, h, tls, protocol, target, events)
      if (fellBack !== null) remember(refusedNewer, where, fellBack === 'refused' ? Infinity : performance.now() + SILENT_REFUSAL_MS)
      closesAnyway.delete(where)
      return conn
    } catch (err) {
      if (!(err instanceof Error)) throw err
      if (protocol === '3.2' && config.minProtocolVersion === '3.0' && isOldProtocolRejection(err, where)) {
        // Servers from before NegotiateProtocolVersion existed, and many
        // poolers and proxies (PgBouncer up to 1.19), refuse 3.2 outright
        // instead of negotiating: ask for 3.0 once. If that works, this host
        // is asked for 3.0 straight away from now on.
        protocol = '3.0'
        fellBack = closedUnanswered.has(err) ? 'closed' : 'refused'
        i--
        continue
      }
      // Closed unanswered at 3.0 too: the version was not the reason (a
      // proxy with no server behind it, say), so later attempts at this host
      // do not try twice, until one succeeds.
      if (fellBack === 'closed' && closedUnanswered.has(err)) remember(closesAnyway, where, Infinity)
      lastErr = err
      if (!retryWithout(tls, err)) throw err
    }
  }
  throw lastErr ?? new ConnectionError('PG_CONNECTION_REFUSED', `could not connect to ${describeHost(h)}`)
}

/**
 * Hosts, by address, that refused a 3.2 startup without negotiating and then
 * accepted 3.0, with when to ask for 3.2 again: never after an explicit
 * refusal, after a while when the 3.2 startup was only closed unanswered
 * (that may also have been a network fault).
 */
const refusedNewer = new Map<string, number>()
const SILENT_REFUSAL_MS = 10 * 60_000
/** Hosts that closed a 3.0 startup unanswered right after a 3.2 one: their closes say nothing of the version. */
const closesAnyway = new Map<string, number>()
const MAX_REMEMBERED_HOSTS = 1024

/** Remembers a host until `until` (performance.now() time) in a bounded map, the oldest forgotten first. */
function remember(hosts: Map<string, number>, where: string, until: number): void {
  hosts.delete(where)
  hosts.set(where, until)
  if (hosts.size > MAX_REMEMBERED_HOSTS) hosts.delete(hosts.keys().next().value!)
}

/** Startups the server closed without sending a byte (set in attempt()). */
const closedUnanswered = new WeakSet<Error>()

/**
 * A refusal of the protocol version itself: PostgreSQL before 9.3 answers
 * 0A000, PgBouncer answers 08P01 ("bad packet header"), and some proxies just
 * close the connection. An unanswered close counts only without TLS: inside
 * TLS an attacker can still cut the connection, and falling back on that would
 * let them force the shorter 3.0 cancel key. Errors inside TLS come from the
 * server itself.
 */
function isOldProtocolRejection(err: Error, where: string): boolean {
  if (err instanceof PgError) {
    return (err.code === Codes.FeatureNotSupported && /protocol/i.test(err.message)) || err.code === Codes.ProtocolViolation || isPgpoolVersionRejection(err)
  }
  return closedUnanswered.has(err) && !closesAnyway.has(where)
}

/**
 * pgpool-II before 4.6 passes a 3.2 startup on to the server and cannot read
 * what comes back: from PostgreSQL 18, a 3.2 BackendKeyData with its longer
 * cancel key ("invalid messages length(...) for BackendKeyData"); from older
 * servers, the NegotiateProtocolVersion that offers 3.0 ("backend response
 * with kind 'v' when expecting 'R'"). Either comes as an XX000 ErrorResponse,
 * pgpool's own word, so 3.0 is asked for even over TLS.
 */
function isPgpoolVersionRejection(err: PgError): boolean {
  return err.code === Codes.InternalError && /BackendKeyData|kind 'v'/.test(`${err.message} ${err.detail ?? ''}`)
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
  let socket: ByteStream | undefined
  let conn: Connection | undefined
  let timer: NodeJS.Timeout | undefined
  let ready = false
  /** Aborted when the attempt fails (its deadline, say), for a `stream` factory still opening. */
  const gaveUp = new AbortController()
  const guarded: ConnectionEvents = {
    notice: (f) => events.notice?.(f),
    notification: (n) => events.notification?.(n),
    parameterStatus: (k, v) => events.parameterStatus?.(k, v),
    queryError: (code) => events.queryError?.(code),
    ...(events.idle !== undefined ? { idle: () => { if (ready) events.idle!() } } : {}),
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
      gaveUp.abort(err)
      reject(err)
    }, config.connectTimeout)
  })
  try {
    // A stream that a `stream` factory hands over after the attempt gave up is closed at once:
    // nobody else would, and it may hold what the next attempt needs (PGlite's one session).
    const register = (s: ByteStream) => {
      socket = s
      if (gaveUp.signal.aborted) s.destroy()
    }
    const transport = await Promise.race([openTransport(config, h, tls, register, 'connection', gaveUp.signal), deadline])
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
  } catch (caught) {
    let err = caught
    if (conn !== undefined && conn.silent && err instanceof ConnectionError && err.code === 'PG_CONNECTION_CLOSED') {
      // No fallback to 3.0 follows a close over TLS, nor when min_protocol_version=3.2.
      if (protocol === '3.2' && (conn.tls || config.minProtocolVersion === '3.2')) err = closedAt32(err, config)
      else if (!conn.tls) closedUnanswered.add(err)
    }
    if (conn) conn.destroy(err as Error)
    else socket?.destroy()
    gaveUp.abort(err)
    throw err
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A 3.2 startup that the server closed without a word, where no fallback to
 * 3.0 follows. Some poolers and proxies close a startup that asks for 3.2
 * instead of negotiating; inside TLS the close may also come from someone on
 * the path, and retrying with 3.0 would hand them the shorter 3.0 cancel key
 * (see isOldProtocolRejection), and min_protocol_version=3.2 forbids 3.0. So
 * the error names the way out instead.
 */
function closedAt32(err: ConnectionError, config: ConnectionConfig): ConnectionError {
  const fix =
    config.minProtocolVersion === '3.2'
      ? 'min_protocol_version=3.2 demands that version; if this server cannot speak it, set min_protocol_version=3.0 and max_protocol_version=3.0'
      : 'pipegres does not retry with 3.0 over TLS on its own (someone on the path could force the shorter 3.0 cancel key that way); if this server needs it, set max_protocol_version=3.0'
  return new ConnectionError('PG_CONNECTION_CLOSED', `${err.message}: some poolers and proxies close a startup that asks for protocol 3.2; ${fix}`, { cause: err })
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
