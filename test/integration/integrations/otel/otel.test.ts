import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { context, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace'
import { Client, createPool } from '../../../../src/index.js'
import { instrumentPipegres } from '../../../../src/integrations/otel/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'

// pipegres/otel against the OpenTelemetry SDK: span names, attributes, the
// status of a failure, and nesting under the application's own spans.

const exporter = new InMemorySpanExporter()
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
const contextManager = new AsyncLocalStorageContextManager()
let stop: () => void

before(() => {
  contextManager.enable()
  context.setGlobalContextManager(contextManager)
  stop = instrumentPipegres({ tracerProvider: provider })
})
after(async () => {
  stop()
  await provider.shutdown()
  context.disable()
})

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId

/** The spans as an indented tree, for the log and for comparing shapes. */
function tree(spans: readonly ReadableSpan[]): string {
  const lines: string[] = []
  const walk = (parent: string | undefined, depth: number): void => {
    for (const s of [...spans].filter((x) => parentOf(x) === parent).sort((a, b) => (a.startTime[0] - b.startTime[0]) * 1e9 + (a.startTime[1] - b.startTime[1]))) {
      const status = s.status.code === SpanStatusCode.ERROR ? ` [ERROR ${String(s.attributes['error.type'])}]` : ''
      lines.push(`${'  '.repeat(depth)}${s.name}${status}`)
      walk(s.spanContext().spanId, depth + 1)
    }
  }
  walk(undefined, 0)
  return lines.join('\n')
}

test('queries, a failure, a connection and a pool reservation as spans under the application span', async (t) => {
  exporter.reset()
  const { options } = await mainDatabase()
  const tracer = provider.getTracer('app')
  const db = new Client({ ...options, applicationName: 'otel-test' })
  const pool = createPool({ ...options, max: 1 })
  try {
    await tracer.startActiveSpan('handleRequest', async (span) => {
      // The first query opens the connection: its span is the connection's parent.
      await db.query('SELECT $1::int AS n', [1])
      await db.query('SELECT 1/0').catch(() => undefined)
      await pool.begin(async (tx) => {
        await tx.query('UPDATE pg_catalog.pg_class SET relname = relname WHERE false')
      })
      span.end()
    })
  } finally {
    await db.end()
    await pool.end()
  }
  const spans = exporter.getFinishedSpans()
  const shape = tree(spans)
  t.diagnostic(`span tree:\n${shape}`)
  const database = db.config.database
  assert.equal(
    shape,
    [
      'handleRequest',
      `  SELECT ${database}`,
      '    pipegres.connect',
      `  SELECT ${database} [ERROR 22012]`,
      // A reservation takes a slot; its connection opens with the first statement sent on it.
      '  pipegres.pool.acquire',
      `  BEGIN ${database}`,
      '    pipegres.connect',
      `  UPDATE ${database}`,
      `  COMMIT ${database}`,
    ].join('\n'),
  )
  const select = spans.find((s) => s.name === `SELECT ${database}` && s.status.code !== SpanStatusCode.ERROR)!
  assert.equal(select.kind, SpanKind.CLIENT)
  assert.equal(select.attributes['db.system.name'], 'postgresql')
  assert.equal(select.attributes['db.namespace'], database)
  assert.equal(select.attributes['db.query.text'], 'SELECT $1::int AS n')
  assert.equal(select.attributes['db.operation.name'], 'SELECT')
  assert.equal(select.attributes['server.address'], db.config.hosts[0]!.host)
  assert.equal(select.attributes['server.port'], db.config.hosts[0]!.port)
  assert.equal(select.attributes['db.response.returned_rows'], 1)
  assert.equal(select.attributes['pipegres.queries_in_flight'], 0)
  assert.equal(select.attributes['db.query.parameter.0'], undefined, 'no parameters without traceParameters')
  const failed = spans.find((s) => s.status.code === SpanStatusCode.ERROR)!
  assert.equal(failed.attributes['db.response.status_code'], '22012')
  assert.equal(failed.status.message, 'division by zero')
  assert.equal(failed.events.filter((e) => e.name === 'exception').length, 1)
  const update = spans.find((s) => s.name.startsWith('UPDATE'))!
  assert.equal(update.attributes['pipegres.rows_affected'], 0)
  const connect = spans.find((s) => s.name === 'pipegres.connect')!
  assert.ok((connect.attributes['pipegres.process_id'] as number) > 0)
  const acquire = spans.find((s) => s.name === 'pipegres.pool.acquire')!
  assert.equal(acquire.attributes['pipegres.pool.max'], 1)
})

test('parameters as db.query.parameter.N with traceParameters: true; requireParentSpan leaves stray queries out', async () => {
  exporter.reset()
  const { options } = await mainDatabase()
  const db = new Client({ ...options, traceParameters: true })
  try {
    await db.query('SELECT $1::text, $2::int, $3::jsonb', ['a', 2, { k: [1] }])
  } finally {
    await db.end()
  }
  const q = exporter.getFinishedSpans().find((s) => s.name.startsWith('SELECT'))!
  assert.deepEqual(
    [q.attributes['db.query.parameter.0'], q.attributes['db.query.parameter.1'], q.attributes['db.query.parameter.2']],
    ['a', '2', '{"k":[1]}'],
  )
  assert.equal(parentOf(q), undefined, 'a root span outside any application span')

  stop()
  stop = instrumentPipegres({ tracerProvider: provider, requireParentSpan: true, connections: false })
  exporter.reset()
  const again = new Client(options)
  try {
    await again.query('SELECT 1')
    await provider.getTracer('app').startActiveSpan('job', async (span) => {
      await again.query('SELECT 2')
      span.end()
    })
  } finally {
    await again.end()
  }
  assert.deepEqual(
    exporter.getFinishedSpans().map((s) => s.name).sort(),
    ['SELECT ' + again.config.database, 'job'],
  )
})
