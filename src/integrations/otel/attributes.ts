import type { Attributes } from '@opentelemetry/api'
import type { AcquireTrace, ConnectTrace, QueryTrace } from '../../index.js'

// OpenTelemetry's database semantic conventions (db.*, server.*, error.type),
// from what pipegres's tracing channels carry; pipegres.* for what they lack.

const SYSTEM = 'postgresql'

/** `{operation} {database}`, or what there is of it: low-cardinality, as the conventions ask. */
export function querySpanName(t: QueryTrace): string {
  if (t.operation !== '' && t.database !== '') return `${t.operation} ${t.database}`
  return t.operation || t.database || SYSTEM
}

function server(t: { serverAddress: string; serverPort: number; database: string }): Attributes {
  const a: Attributes = { 'db.system.name': SYSTEM, 'db.namespace': t.database, 'server.address': t.serverAddress }
  if (t.serverPort > 0) a['server.port'] = t.serverPort
  return a
}

/** A parameter value as an attribute: text, never an object (attributes are flat). */
function paramText(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v)
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString()
  if (v instanceof Uint8Array) return `<${v.length} bytes>`
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x)) ?? String(v)
  } catch {
    return String(v)
  }
}

/** What is known when a query is issued. */
export function queryStartAttributes(t: QueryTrace): Attributes {
  const a = server(t)
  a['db.query.text'] = t.query
  if (t.operation !== '') a['db.operation.name'] = t.operation
  a['pipegres.query.kind'] = t.kind
  if (t.values !== undefined) {
    // Only present when the client was created with traceParameters: true.
    t.values.forEach((v, i) => (a[`db.query.parameter.${i}`] = paramText(v)))
  }
  return a
}

/** What is known once it settled: the connection it went to, and its outcome. */
export function queryEndAttributes(t: QueryTrace): Attributes {
  const a: Attributes = { 'server.address': t.serverAddress, 'pipegres.queries_in_flight': t.inflight }
  if (t.serverPort > 0) a['server.port'] = t.serverPort
  if (t.command !== undefined) a['pipegres.command'] = t.command
  if (typeof t.rowCount === 'number') {
    if (t.command === 'SELECT' || t.command === 'FETCH' || t.kind === 'stream' || t.kind === 'cursor') a['db.response.returned_rows'] = t.rowCount
    else a['pipegres.rows_affected'] = t.rowCount
  }
  if (t.sqlstate !== undefined) a['db.response.status_code'] = t.sqlstate
  return a
}

/** error.type: the SQLSTATE, else pipegres's error code, else the error's class. */
export function errorType(t: { error?: unknown; sqlstate?: string }): string {
  if (t.sqlstate !== undefined) return t.sqlstate
  const e = t.error as { code?: unknown; name?: unknown } | null | undefined
  if (typeof e?.code === 'string') return e.code
  return typeof e?.name === 'string' ? e.name : '_OTHER'
}

export function connectAttributes(t: ConnectTrace): Attributes {
  const a = server(t)
  if (t.processId !== undefined) a['pipegres.process_id'] = t.processId
  return a
}

export function acquireAttributes(t: AcquireTrace): Attributes {
  const a = server(t)
  a['pipegres.pool.max'] = t.max
  a['pipegres.pool.size'] = t.size
  a['pipegres.pool.waiting'] = t.waiting
  return a
}
