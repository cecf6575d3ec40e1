import { AsyncLocalStorage } from 'node:async_hooks'
import dc from 'node:diagnostics_channel'
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api'
import type { AcquireTrace, ConnectTrace, QueryTrace } from '../../index.js'
import { acquireAttributes, connectAttributes, errorType, queryEndAttributes, querySpanName, queryStartAttributes } from './attributes.js'

// pipegres/otel: OpenTelemetry spans from pipegres's tracing channels
// (pipegres:query, pipegres:connect, pipegres:pool:acquire). A span starts
// when the operation does, as a child of the span active in the caller's
// context, and ends when its promise settles.

export interface PipegresInstrumentationOptions {
  /** Where spans go. Default: the global tracer provider. */
  tracerProvider?: TracerProvider
  /** Spans for connection attempts and pool reservations, not only queries (default true). */
  connections?: boolean
  /** Only queries issued inside a span of the application get spans of their own (default false). */
  requireParentSpan?: boolean
}

const NAME = 'pipegres'

type Traced = QueryTrace | ConnectTrace | AcquireTrace

interface Kind<T extends Traced> {
  channel: string
  name(t: T): string
  kind: SpanKind
  start(t: T): Attributes
  end(t: T): Attributes
}

const kinds = {
  query: {
    channel: 'pipegres:query',
    name: querySpanName,
    kind: SpanKind.CLIENT,
    start: queryStartAttributes,
    end: queryEndAttributes,
  } satisfies Kind<QueryTrace>,
  connect: {
    channel: 'pipegres:connect',
    name: () => 'pipegres.connect',
    kind: SpanKind.CLIENT,
    start: connectAttributes,
    end: connectAttributes,
  } satisfies Kind<ConnectTrace>,
  acquire: {
    channel: 'pipegres:pool:acquire',
    name: () => 'pipegres.pool.acquire',
    kind: SpanKind.INTERNAL,
    start: acquireAttributes,
    end: () => ({}),
  } satisfies Kind<AcquireTrace>,
}

/**
 * Starts turning pipegres's traces into spans; returns the function that
 * stops it. Query spans follow the database semantic conventions (db.*,
 * server.*, error.type); parameter values appear (as db.query.parameter.N)
 * only for clients and pools created with `traceParameters: true`.
 */
export function instrumentPipegres(options: PipegresInstrumentationOptions = {}): () => void {
  const provider = options.tracerProvider ?? trace.getTracerProvider()
  const tracer = provider.getTracer(NAME)
  // The context of the pipegres span in progress: a connection opened for a
  // query, or a reservation made for a cursor, becomes a child of its span.
  const current = new AsyncLocalStorage<Context>()
  const stops: (() => void)[] = []
  const list: Kind<Traced>[] = [kinds.query as Kind<Traced>]
  if (options.connections !== false) list.push(kinds.connect as Kind<Traced>, kinds.acquire as Kind<Traced>)
  for (const k of list) stops.push(follow(k, tracer, current, options.requireParentSpan === true))
  return () => {
    for (const stop of stops.splice(0)) stop()
  }
}

/** The caller's context, or that of the pipegres span it runs under while that span is still going. */
function parentContext(current: AsyncLocalStorage<Context>): Context {
  const held = current.getStore()
  // A socket callback keeps the store of whatever opened the connection: only a span still going is a parent.
  if (held !== undefined && trace.getSpan(held)?.isRecording() === true) return held
  return context.active()
}

function follow<T extends Traced>(k: Kind<T>, tracer: Tracer, current: AsyncLocalStorage<Context>, requireParent: boolean): () => void {
  const ch = dc.tracingChannel<Context, T>(k.channel)
  const spans = new WeakMap<T, Span>()
  const begin = (t: T): Context => {
    const parent = parentContext(current)
    if (requireParent && trace.getSpan(parent) === undefined) return parent
    const span = tracer.startSpan(k.name(t), { kind: k.kind, attributes: k.start(t) }, parent)
    spans.set(t, span)
    return trace.setSpan(parent, span)
  }
  const finish = (t: T): void => {
    const span = spans.get(t)
    if (span === undefined) return
    spans.delete(t)
    span.setAttributes(k.end(t))
    if (t.error !== undefined) {
      span.setAttribute('error.type', errorType(t))
      if (t.error instanceof Error) span.recordException(t.error)
      span.setStatus({ code: SpanStatusCode.ERROR, message: t.error instanceof Error ? t.error.message : String(t.error) })
    }
    span.end()
  }
  const bindable = typeof ch.start.bindStore === 'function'
  // bindStore runs `begin` before start's subscribers, in the caller's context, and keeps the span's context for what the operation does.
  if (bindable) ch.start.bindStore(current, begin)
  const handlers = {
    start: bindable ? () => {} : (t: T) => void begin(t),
    end: (t: T) => {
      // An error before the end event was thrown at once: no asyncEnd follows.
      if (t.error !== undefined) finish(t)
    },
    asyncStart: () => {},
    asyncEnd: finish,
    error: () => {},
  }
  ch.subscribe(handlers)
  return () => {
    ch.unsubscribe(handlers)
    if (bindable) ch.start.unbindStore(current)
  }
}
