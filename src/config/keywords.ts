// The libpq connection keywords pipegres understands, the ones it knows but
// refuses, and where each one may come from. One table, so the URL parser, the
// key=value parser, the environment reader and the error messages agree.

/** libpq keywords (plus pipegres's own `prepare` and `statement_cache_size`) accepted in connection strings. */
export const KEYWORDS = [
  'host',
  'hostaddr',
  'port',
  'dbname',
  'user',
  'password',
  'passfile',
  'application_name',
  'fallback_application_name',
  'options',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'sslpassword',
  'sslcrl',
  'sslsni',
  'sslnegotiation',
  'sslkeylogfile',
  'channel_binding',
  'require_auth',
  'min_protocol_version',
  'max_protocol_version',
  'connect_timeout',
  'keepalives',
  'keepalives_idle',
  'keepalives_interval',
  'keepalives_count',
  'tcp_user_timeout',
  'target_session_attrs',
  'load_balance_hosts',
  'replication',
  'service',
  'servicefile',
  // OAuth (PostgreSQL 18): the token itself comes from the application (see oauthBearerToken).
  'oauth_issuer',
  'oauth_client_id',
  'oauth_client_secret',
  'oauth_scope',
  // Accepted only with values that match what pipegres does anyway (see resolve.ts).
  'gssencmode',
  'sslcompression',
  'client_encoding',
  // pipegres's own.
  'prepare',
  'pooler',
  'statement_cache_size',
] as const

export type Keyword = (typeof KEYWORDS)[number]

const KEYWORD_SET: ReadonlySet<string> = new Set(KEYWORDS)

export function isKeyword(key: string): key is Keyword {
  return KEYWORD_SET.has(key)
}

/**
 * libpq keywords pipegres does not implement, with what to do instead. Reported
 * as "not supported" rather than "unknown" so a user copying a working libpq
 * string learns it is a known gap, not a typo.
 */
export const UNSUPPORTED_KEYWORDS: ReadonlyMap<string, string> = new Map([
  ['krbsrvname', 'GSSAPI/Kerberos authentication is not implemented'],
  ['gsslib', 'GSSAPI/Kerberos authentication is not implemented'],
  ['gssdelegation', 'GSSAPI/Kerberos authentication is not implemented'],
  ['requirepeer', 'the peer check on unix sockets is not implemented'],
  ['ssl_min_protocol_version', 'use the tls option { minVersion } instead'],
  ['ssl_max_protocol_version', 'use the tls option { maxVersion } instead'],
  ['sslcertmode', 'a client certificate is sent whenever sslcert is set and the server asks'],
  ['sslcrldir', 'use sslcrl with a file instead'],
  ['requiressl', 'use sslmode=require'],
  ['scram_client_key', 'SCRAM pass-through keys are not implemented'],
  ['scram_server_key', 'SCRAM pass-through keys are not implemented'],
  ['ssl', 'use sslmode=require (only ssl=true is understood in a URL, for JDBC compatibility)'],
])

/** Keywords whose values must never appear in a message. */
export function isSecretKeyword(key: string): boolean {
  return key === 'password' || key === 'sslpassword' || key === 'oauth_client_secret'
}

/** The PG* environment variables read, in libpq's spelling, and the keyword each stands for. */
export const ENV_VARS: ReadonlyArray<readonly [string, Keyword]> = [
  ['PGHOST', 'host'],
  ['PGHOSTADDR', 'hostaddr'],
  ['PGPORT', 'port'],
  ['PGDATABASE', 'dbname'],
  ['PGUSER', 'user'],
  ['PGPASSWORD', 'password'],
  ['PGPASSFILE', 'passfile'],
  ['PGAPPNAME', 'application_name'],
  ['PGOPTIONS', 'options'],
  ['PGSSLMODE', 'sslmode'],
  ['PGSSLROOTCERT', 'sslrootcert'],
  ['PGSSLCERT', 'sslcert'],
  ['PGSSLKEY', 'sslkey'],
  ['PGSSLCRL', 'sslcrl'],
  ['PGSSLSNI', 'sslsni'],
  ['PGSSLNEGOTIATION', 'sslnegotiation'],
  ['PGCHANNELBINDING', 'channel_binding'],
  ['PGREQUIREAUTH', 'require_auth'],
  ['PGMINPROTOCOLVERSION', 'min_protocol_version'],
  ['PGMAXPROTOCOLVERSION', 'max_protocol_version'],
  ['PGCONNECT_TIMEOUT', 'connect_timeout'],
  ['PGTARGETSESSIONATTRS', 'target_session_attrs'],
  ['PGLOADBALANCEHOSTS', 'load_balance_hosts'],
  ['PGGSSENCMODE', 'gssencmode'],
  ['PGSERVICE', 'service'],
  ['PGSERVICEFILE', 'servicefile'],
]

/** The options-object field that corresponds to a keyword, for "did you mean" hints. */
export const OPTION_FOR_KEYWORD: Readonly<Record<Keyword, string | undefined>> = {
  host: 'host',
  hostaddr: 'hostaddr',
  port: 'port',
  dbname: 'database',
  user: 'user',
  password: 'password',
  passfile: 'passfile',
  application_name: 'applicationName',
  fallback_application_name: 'fallbackApplicationName',
  options: 'options',
  sslmode: 'sslmode',
  sslrootcert: 'sslrootcert',
  sslcert: 'sslcert',
  sslkey: 'sslkey',
  sslpassword: 'sslpassword',
  sslcrl: 'sslcrl',
  sslsni: 'sslsni',
  sslnegotiation: 'sslnegotiation',
  sslkeylogfile: 'sslkeylogfile',
  channel_binding: 'channelBinding',
  require_auth: 'requireAuth',
  min_protocol_version: 'minProtocolVersion',
  max_protocol_version: 'maxProtocolVersion',
  connect_timeout: 'connectTimeout',
  keepalives: 'keepAlive',
  keepalives_idle: 'keepAliveIdle',
  keepalives_interval: 'keepAliveInterval',
  keepalives_count: 'keepAliveCount',
  tcp_user_timeout: 'tcpUserTimeout',
  target_session_attrs: 'targetSessionAttrs',
  load_balance_hosts: 'loadBalanceHosts',
  replication: 'replication',
  service: 'service',
  servicefile: 'servicefile',
  oauth_issuer: 'oauthIssuer',
  oauth_client_id: undefined,
  oauth_client_secret: undefined,
  oauth_scope: undefined,
  gssencmode: undefined,
  sslcompression: undefined,
  client_encoding: undefined,
  prepare: 'prepare',
  pooler: 'pooler',
  statement_cache_size: 'statementCacheSize',
}

/** The closest candidate within edit distance 2, for a "did you mean" hint. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = 3
  const lower = word.toLowerCase()
  for (const candidate of candidates) {
    const d = editDistance(lower, candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost))
    }
    prev = row
  }
  return prev[b.length] ?? 0
}
