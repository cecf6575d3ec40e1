import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import { ConfigError } from '../errors.js'
import { KEYWORDS, OPTION_FOR_KEYWORD, closest, isKeyword } from './keywords.js'
import type {
  ChannelBinding,
  PasswordSource,
  ProtocolVersion,
  SslMode,
  SslNegotiation,
  TargetSessionAttrs,
} from './types.js'
import type { StreamFactory } from './byte-stream.js'

/**
 * How to reach and log in to a server. Every field is optional: a field given
 * here overrides the same setting in `connectionString`, which overrides the
 * PG* environment variables, which override the defaults (as in libpq).
 */
export interface ConnectOptions {
  /** A libpq connection string, URL (`postgres://user:pass@host:5432/db?sslmode=require`) or key=value (`host=db dbname=app`). */
  connectionString?: string
  /** Host name, IP address, or unix-socket directory (starting with `/`); several (array or comma-separated) are tried in order. Default `localhost` (PGHOST). */
  host?: string | string[]
  /** Server port, or one port per host (number, array, or comma-separated string). Default 5432 (PGPORT). */
  port?: number | string | number[]
  /** Numeric IP address(es) to connect to without a DNS lookup; `host` still names the server for TLS and .pgpass (PGHOSTADDR). */
  hostaddr?: string | string[]
  /** Database user. Default: the operating system user name (PGUSER). */
  user?: string
  /** Password, or a function returning one, called at every connection attempt (PGPASSWORD; else the password file). */
  password?: PasswordSource
  /** Database name. Default: the user name (PGDATABASE). */
  database?: string
  /** Reported in pg_stat_activity.application_name (PGAPPNAME). */
  applicationName?: string
  /** application_name to use when neither `applicationName` nor PGAPPNAME is set. */
  fallbackApplicationName?: string
  /** Command-line options for the server process, e.g. `-c search_path=app` (PGOPTIONS). */
  options?: string
  /** Extra startup parameters, i.e. server settings for the session, e.g. `{ statement_timeout: '5s' }`. */
  params?: Record<string, string>
  /** TLS policy: disable, allow, prefer (default), require, verify-ca or verify-full (PGSSLMODE). */
  sslmode?: SslMode
  /** CA certificate file to verify the server with, or `system` for the system trust store (PGSSLROOTCERT). */
  sslrootcert?: string
  /** Client certificate file (PGSSLCERT). */
  sslcert?: string
  /** Client private key file (PGSSLKEY). */
  sslkey?: string
  /** Passphrase of an encrypted `sslkey`. */
  sslpassword?: string
  /** Certificate revocation list file (PGSSLCRL). */
  sslcrl?: string
  /** Send the host name as TLS SNI. Default true (PGSSLSNI). */
  sslsni?: boolean
  /** `postgres` (default): ask the server for TLS first; `direct`: start TLS at once (PostgreSQL 17+, needs sslmode require or stronger). */
  sslnegotiation?: SslNegotiation
  /**
   * File to append the TLS session keys to, in the NSS key log format Wireshark reads
   * (libpq 18 `sslkeylogfile`). Created with mode 0600. For debugging only: anyone with
   * this file can decrypt the captured traffic, passwords and data included.
   */
  sslkeylogfile?: string
  /** Extra options merged into the node:tls connect options (e.g. `ca` as a PEM string). */
  tls?: TlsConnectionOptions
  /**
   * Opens the byte stream each connection runs over, instead of a TCP or unix socket:
   * for SSH tunnels, cloud SQL connectors, runtimes without node:net, and tests. Called
   * once per connection attempt and once per cancel request (a cancel is a second
   * connection), with the host and port being tried; returns (or resolves with) a
   * Node Duplex or any {@link ByteStream}. TLS still follows sslmode over it.
   */
  stream?: StreamFactory
  /** SCRAM channel binding: disable, prefer (default) or require (PGCHANNELBINDING). */
  channelBinding?: ChannelBinding
  /** Authentication methods the server may use, libpq syntax: `scram-sha-256`, or negated `!password,!md5` (PGREQUIREAUTH). */
  requireAuth?: string
  /**
   * OAuth bearer token for servers that authenticate with OAuth (PostgreSQL 18, SASL
   * mechanism OAUTHBEARER), or a function returning one, called once per connection
   * attempt that the server asks for it. pipegres runs no OAuth flow of its own: the
   * application gets the token from its issuer. Sent only over TLS with
   * sslmode=verify-full unless `oauthAllowInsecure` is true.
   */
  oauthBearerToken?: string | (() => string | Promise<string>)
  /**
   * Send the OAuth bearer token over a connection that is not TLS with
   * sslmode=verify-full (plaintext, a unix socket, or TLS whose server name is not
   * checked). A bearer token is a password: whoever sees it can use it until it expires.
   * Default false.
   */
  oauthAllowInsecure?: boolean
  /** The issuer the OAuth token comes from (libpq `oauth_issuer`); when the server rejects the token, the error says whether its discovery URL belongs to this issuer. */
  oauthIssuer?: string
  /** Lowest protocol version to accept: `3.0` (default), `3.2` or `latest` (PGMINPROTOCOLVERSION). */
  minProtocolVersion?: ProtocolVersion | 'latest'
  /** Protocol version to ask for: `3.2` (default), `3.0` or `latest` (PGMAXPROTOCOLVERSION). */
  maxProtocolVersion?: ProtocolVersion | 'latest'
  /** Milliseconds to wait for each host to accept a connection (default 30000); 0 waits forever (PGCONNECT_TIMEOUT, in seconds). */
  connectTimeout?: number
  /**
   * Check that the server is still there: TCP keepalive probes, and pipegres's own
   * checks of a silent connection (see "Dead peers" in the README). Default true.
   */
  keepAlive?: boolean
  /** Milliseconds of silence before the first check; 0 uses the system default for TCP and 60000 for pipegres's checks. Default 60000. */
  keepAliveIdle?: number
  /** Milliseconds between unanswered checks; 0 uses the default. Default 10000. */
  keepAliveInterval?: number
  /** Unanswered checks after which the connection is taken for lost; 0 uses the default. Default 3. */
  keepAliveCount?: number
  /**
   * Milliseconds a write may stay undrained before the connection is taken for lost (libpq
   * `tcp_user_timeout`, in milliseconds there too). 0: `keepAliveIdle + keepAliveInterval ×
   * keepAliveCount` while keepalives are on, else no limit. Default 0.
   */
  tcpUserTimeout?: number
  /** Which kind of server to accept: any (default), read-write, read-only, primary, standby or prefer-standby (PGTARGETSESSIONATTRS). */
  targetSessionAttrs?: TargetSessionAttrs
  /** `random` tries the hosts in random order; `disable` (default) in the order given (PGLOADBALANCEHOSTS). */
  loadBalanceHosts?: 'disable' | 'random'
  /**
   * Open a replication connection (libpq's `replication`): `'database'` for
   * logical replication (the walsender of one database, which also takes SQL
   * through the simple protocol), `true` for physical replication. Default false.
   */
  replication?: boolean | 'database'
  /** Password file to look the password up in when none is given. Default PGPASSFILE, else ~/.pgpass. */
  passfile?: string
  /** Connection service to read settings from (libpq `service` / PGSERVICE): a `[name]` section of the service file. */
  service?: string
  /** Connection service file (libpq 18 `servicefile`). Default PGSERVICEFILE, else ~/.pg_service.conf; then PGSYSCONFDIR/pg_service.conf. */
  servicefile?: string
  /**
   * Named, cached prepared statements (URL: `prepare=always`, `prepare=false`).
   * `true` (the default): named, except behind a transaction-mode pooler (declared
   * with `pooler`, or recognised by its made-up backend pid), where each query uses
   * the unnamed statement. `'always'`: named there too, for a pooler that keeps
   * prepared statements itself (PgBouncer 1.21+ with `max_prepared_statements` > 0).
   * `false`: never.
   */
  prepare?: boolean | 'always'
  /**
   * What the hosts are, when they are a connection pooler (URL: `pooler=transaction`).
   * `'transaction'` for a transaction-mode pooler (PgBouncer's `pool_mode=transaction`):
   * listen() and statements that would leave state on a server session (SET, LISTEN,
   * DECLARE ... WITH HOLD, PREPARE, CREATE TEMP TABLE) are refused with an error naming
   * them, and no query is spent finding out. `'session'` for a session-mode pooler.
   * Default: not said.
   */
  pooler?: 'session' | 'transaction'
  /** Prepared statements kept per connection before the least recently used is closed; 0 disables the cache (statements are then unnamed). Default 256. */
  statementCacheSize?: number
  /** Largest message accepted from the server, in bytes. Default 1 GiB + 64 KiB. */
  maxMessageSize?: number
}

export type OptionField = keyof ConnectOptions

const OPTION_FIELDS: readonly OptionField[] = [
  'connectionString',
  'host',
  'port',
  'hostaddr',
  'user',
  'password',
  'database',
  'applicationName',
  'fallbackApplicationName',
  'options',
  'params',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'sslpassword',
  'sslcrl',
  'sslsni',
  'sslnegotiation',
  'sslkeylogfile',
  'tls',
  'stream',
  'channelBinding',
  'requireAuth',
  'oauthBearerToken',
  'oauthAllowInsecure',
  'oauthIssuer',
  'minProtocolVersion',
  'maxProtocolVersion',
  'connectTimeout',
  'keepAlive',
  'keepAliveIdle',
  'keepAliveInterval',
  'keepAliveCount',
  'tcpUserTimeout',
  'targetSessionAttrs',
  'loadBalanceHosts',
  'replication',
  'passfile',
  'service',
  'servicefile',
  'prepare',
  'pooler',
  'statementCacheSize',
  'maxMessageSize',
]

const FIELD_SET: ReadonlySet<string> = new Set(OPTION_FIELDS)

/** Hints for keys people bring from other clients. */
const FOREIGN_KEYS: ReadonlyMap<string, string> = new Map([
  ['ssl', 'use sslmode, and tls for node:tls options'],
  ['connectionTimeoutMillis', 'use connectTimeout (milliseconds)'],
  ['keepAliveInitialDelayMillis', 'use keepAliveIdle (milliseconds)'],
  ['db', 'use database'],
  ['username', 'use user'],
])

/** Fields that take lists, where [] means "none given" like an empty string. */
const LIST_FIELDS: ReadonlySet<string> = new Set(['host', 'port', 'hostaddr'])

/**
 * The options object's set fields. Fields that are undefined, null or '' (or
 * [] for a list field) count as not given, so a lower-precedence source still
 * applies. Unknown keys are errors, except `ignoreKeys` (options of other layers).
 */
export function collectOptions(options: object, ignoreKeys: readonly string[]): Map<OptionField, unknown> {
  const out = new Map<OptionField, unknown>()
  for (const key of Object.keys(options)) {
    if (ignoreKeys.includes(key)) continue
    if (!FIELD_SET.has(key)) throw unknownOption(key)
    const value: unknown = (options as Record<string, unknown>)[key]
    if (value === undefined || value === null || value === '') continue
    if (Array.isArray(value) && value.length === 0 && LIST_FIELDS.has(key)) continue
    out.set(key as OptionField, value)
  }
  return out
}

function unknownOption(key: string): ConfigError {
  const foreign = FOREIGN_KEYS.get(key)
  let hint: string | undefined
  if (foreign !== undefined) hint = foreign
  else if (isKeyword(key) && OPTION_FOR_KEYWORD[key] !== undefined) hint = `did you mean "${OPTION_FOR_KEYWORD[key]}"?`
  else {
    const suggestion = closest(key, OPTION_FIELDS) ?? closest(key, KEYWORDS.filter((k) => OPTION_FOR_KEYWORD[k] !== undefined))
    if (suggestion !== undefined) {
      const field = isKeyword(suggestion) ? OPTION_FOR_KEYWORD[suggestion] : suggestion
      hint = `did you mean "${field}"?`
    }
  }
  return new ConfigError(key, `unknown connection setting "${key}"${hint === undefined ? '' : ` (${hint})`}`)
}

/** A value's type as a message should name it. */
export function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}
