// The one validated shape every connection is opened from. Strings, URLs, the
// options object and PG* variables are all turned into this by resolveConfig().

export type SslMode = 'disable' | 'allow' | 'prefer' | 'require' | 'verify-ca' | 'verify-full'
export type ChannelBinding = 'disable' | 'prefer' | 'require'
export type SslNegotiation = 'postgres' | 'direct'
export type TargetSessionAttrs = 'any' | 'read-write' | 'read-only' | 'primary' | 'standby' | 'prefer-standby'
export type AuthMethodName = 'password' | 'md5' | 'scram-sha-256' | 'oauth' | 'gss' | 'sspi' | 'none'
export type ProtocolVersion = '3.0' | '3.2'
import type { StreamFactory } from './byte-stream.js'

/** A password, or a function returning one (called at every connection attempt, e.g. for rotating tokens). */
export type PasswordSource = string | (() => string | Promise<string>)

/** One host to try. A host starting with '/' is a unix-socket directory; '@' an abstract socket name. */
export interface HostAddress {
  host: string
  port: number
  /** libpq's hostaddr: a numeric address to connect to instead of resolving `host` (which still names it for TLS). */
  hostaddr: string | undefined
}

/** The libpq `require_auth` setting: which methods the server may ask for. */
export interface RequireAuth {
  /** Methods named in the list. */
  methods: ReadonlySet<AuthMethodName>
  /** True when the list was given as negations (`!md5,!password`): the named methods are forbidden, the rest allowed. */
  negated: boolean
}

/**
 * `password`, `sslpassword`, `oauthBearerToken` and `tls` are non-enumerable on the objects
 * resolveConfig() returns, so that printing a config never shows a secret: copy
 * a config field by field, never with spread.
 */
export interface ConnectionConfig {
  /** Tried in order until one accepts (or in random order with loadBalanceHosts: 'random'). Never empty. */
  hosts: HostAddress[]
  user: string
  database: string
  /** undefined: no password configured; then passfile is consulted at connect time. */
  password: PasswordSource | undefined
  /** Path of the password file (PGPASSFILE, passfile=, or ~/.pgpass); undefined when none applies. */
  passfile: string | undefined
  applicationName: string | undefined
  fallbackApplicationName: string | undefined
  /** libpq `options`: command-line options sent to the backend at startup, e.g. `-c search_path=app`. */
  options: string | undefined
  /** Further startup parameters (server settings such as statement_timeout), sent as given. */
  runtimeParams: Record<string, string>

  sslmode: SslMode
  /** Path of a CA bundle, or 'system' for the system's trust store. undefined: the libpq default ~/.postgresql/root.crt if it exists. */
  sslrootcert: string | undefined
  sslcert: string | undefined
  sslkey: string | undefined
  sslpassword: string | undefined
  sslcrl: string | undefined
  /** Send the host name as TLS SNI (libpq sslsni, default true). */
  sslsni: boolean
  sslnegotiation: SslNegotiation
  /** libpq 18 `sslkeylogfile`: append the TLS key material (NSS key log format) to this file, for debugging with Wireshark. */
  sslkeylogfile: string | undefined
  /** Extra options merged into node:tls connect options (e.g. `ca` as a string); from the options object only. */
  tls: Record<string, unknown> | undefined
  /** Opens the byte stream instead of a TCP or unix socket; from the options object only. */
  stream: StreamFactory | undefined
  channelBinding: ChannelBinding
  /** undefined: any method is allowed. */
  requireAuth: RequireAuth | undefined
  /** The OAuth bearer token for SASL OAUTHBEARER (PostgreSQL 18); pipegres never fetches one itself. */
  oauthBearerToken: string | (() => string | Promise<string>) | undefined
  /** Send the token even over a connection that is not TLS with sslmode=verify-full. */
  oauthAllowInsecure: boolean
  /** libpq `oauth_issuer`: the issuer the token is expected to come from, checked against the server's discovery URL when the server rejects the token. */
  oauthIssuer: string | undefined
  /** The connection service (libpq `service` / PGSERVICE) whose settings were read, and the file it was found in. */
  service: { name: string; file: string } | undefined
  minProtocolVersion: ProtocolVersion
  maxProtocolVersion: ProtocolVersion

  /** Milliseconds; 0 means no limit. From connect_timeout (seconds) or connectTimeout (ms). */
  connectTimeout: number
  keepAlive: boolean
  /** Milliseconds of idleness before the first keepalive probe (0: the system's default). */
  keepAliveIdle: number
  /** Milliseconds between keepalive probes (0: the default). */
  keepAliveInterval: number
  /** Unanswered probes before the peer is taken for dead (0: the default). */
  keepAliveCount: number
  /** Milliseconds a write may stay undrained (0: the keepalive bound, or none with keepalives off). */
  tcpUserTimeout: number
  targetSessionAttrs: TargetSessionAttrs
  loadBalanceHosts: 'disable' | 'random'
  /** libpq's `replication`: a logical ('database') or physical walsender connection; undefined: an ordinary one. */
  replication: 'database' | 'physical' | undefined

  /**
   * pipegres: use named, cached prepared statements. true: except behind a
   * transaction-mode pooler (declared, or recognised by its made-up backend
   * pid), where they run unnamed; 'always': there too, for a pooler that keeps
   * prepared statements itself (PgBouncer 1.21+ with max_prepared_statements);
   * false: never.
   */
  prepare: boolean | 'always'
  /**
   * pipegres: what the hosts are, when they are known to be a pooler. 'transaction': a
   * transaction-mode pooler (statements that would leave state on a server session are
   * refused); 'session': a session-mode pooler, which keeps a server connection per
   * client like a direct connection; undefined: not said (found out when it matters).
   */
  pooler: 'session' | 'transaction' | undefined
  /** pipegres: how many prepared statements one connection keeps before closing the least recently used. */
  statementCacheSize: number
  /** pipegres: the largest message accepted from the server, in bytes. */
  maxMessageSize: number
}
