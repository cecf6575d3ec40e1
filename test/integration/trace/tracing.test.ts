import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import dc from 'node:diagnostics_channel'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createPool, type QueryTrace, type ConnectTrace, type AcquireTrace } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { mainDatabase } from '../../support/servers/test-server.js'

// The tracing channels: names, context fields, the order of events, and the
// AsyncLocalStorage context their handlers run in.

type Event = 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error'

interface Recorded<C> {
  event: Event
  ctx: C
  store: unknown
}

/** Records every event of a tracing channel (and the store current in each handler) until the returned stop(). */
function record<C extends object>(name: string, als?: AsyncLocalStorage<unknown>): { events: Recorded<C>[]; stop: () => void } {
  const ch = dc.tracingChannel<string, C>(name)
  const events: Recorded<C>[] = []
  const on = (event: Event) => (ctx: C) => events.push({ event, ctx, store: als?.getStore() })
  const handlers = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') }
  ch.subscribe(handlers)
  return { events, stop: () => ch.unsubscribe(handlers) }
}

/** The contexts that reached asyncEnd, in order. */
function finished<C>(events: Recorded<C>[]): C[] {
  return events.filter((e) => e.event === 'asyncEnd').map((e) => e.ctx)
}

const db = await fileClient()

test('pipegres:query: the fields OpenTelemetry needs, in tracePromise order, and no parameters unless asked for', async () => {
  const { events, stop } = record<QueryTrace>('pipegres:query')
  try {
    const r = await db.query('  /* hi */ select $1::int AS n', [7])
    assert.equal(r.rows.length, 1)
  } finally {
    stop()
  }
  assert.deepEqual(
    events.map((e) => e.event),
    ['start', 'end', 'asyncStart', 'asyncEnd'],
  )
  const ctx = events[0]!.ctx
  assert.equal(ctx.query, '  /* hi */ select $1::int AS n')
  assert.equal(ctx.operation, 'SELECT')
  assert.equal(ctx.kind, 'query')
  assert.equal(ctx.database, db.config.database)
  assert.equal(ctx.user, db.config.user)
  assert.equal(ctx.serverAddress, db.config.hosts[0]!.host)
  assert.equal(ctx.serverPort, db.config.hosts[0]!.port)
  assert.equal(ctx.inflight, 0)
  assert.equal(ctx.rowCount, 1)
  assert.equal(ctx.command, 'SELECT')
  assert.equal(ctx.values, undefined)
  assert.equal(ctx.error, undefined)
})

test('a failed query: the error event with its SQLSTATE, then asyncStart and asyncEnd', async () => {
  const { events, stop } = record<QueryTrace>('pipegres:query')
  try {
    await assert.rejects(db.query('SELECT 1/0'))
  } finally {
    stop()
  }
  assert.deepEqual(
    events.map((e) => e.event),
    ['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
  )
  const ctx = events[0]!.ctx
  assert.equal(ctx.sqlstate, '22012')
  assert.ok(ctx.error instanceof Error)
})

test('traceParameters: true puts the values in the context; inflight counts the queries sent before', async () => {
  const traced = await openClient({ traceParameters: true })
  const { events, stop } = record<QueryTrace>('pipegres:query')
  try {
    await Promise.all([traced.query('SELECT $1::text AS a', ['x']), traced.query('SELECT $1::int AS b', [2]), traced.query('SELECT 3')])
  } finally {
    stop()
    await traced.end()
  }
  const done = finished(events)
  assert.deepEqual(
    done.map((c) => c.values),
    [['x'], [2], undefined],
  )
  assert.deepEqual(
    done.map((c) => c.inflight),
    [0, 1, 2],
  )
})

test('every way of running a query is traced: transactions, streams, cursors, raw, simple queries, COPY', async () => {
  const table = uniqueName('traced_copy')
  await db.query(`CREATE TABLE ${table} (id int)`)
  const { events, stop } = record<QueryTrace>('pipegres:query')
  try {
    await db.begin(async (tx) => {
      await tx.query('SELECT 1')
    })
    for await (const _ of db.stream('SELECT generate_series(1, 3)')) void _
    for await (const _ of db.cursor('SELECT generate_series(1, 3)', [], { batchSize: 2 })) void _
    await db.simpleQuery('SELECT 1; SELECT 2')
    await pipeline(Readable.from(['1\n2\n']), db.copyFrom(`COPY ${table} FROM STDIN`))
    await db.copyFromRows(table, [[3], [4]])
    for await (const _ of db.copyToRows(`SELECT * FROM ${table}`)) void _
  } finally {
    stop()
    await db.query(`DROP TABLE ${table}`)
  }
  const done = finished(events).map((c) => `${c.kind} ${c.operation} ${c.rowCount}`)
  for (const expected of [
    'query BEGIN null',
    'query SELECT 1',
    'query COMMIT null',
    'stream SELECT 3',
    'cursor SELECT 1',
    'simple SELECT 2',
    'copy COPY 2',
    'copy COPY 2',
    'copy COPY 4',
  ]) {
    assert.ok(done.includes(expected), `${expected} is not among ${JSON.stringify(done)}`)
  }
})

test('handlers run in the AsyncLocalStorage context of the caller, and a store bound to start flows to the outcome', async () => {
  const app = new AsyncLocalStorage<unknown>()
  const bound = new AsyncLocalStorage<string>()
  const ch = dc.tracingChannel<string, QueryTrace>('pipegres:query')
  ch.start.bindStore(bound, (ctx) => `span for ${ctx.operation}`)
  const seen: { event: string; app: unknown; bound: unknown }[] = []
  const on = (event: string) => () => seen.push({ event, app: app.getStore(), bound: bound.getStore() })
  const handlers = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') }
  ch.subscribe(handlers)
  try {
    await app.run('request 1', () => db.query('SELECT 1'))
  } finally {
    ch.unsubscribe(handlers)
    ch.start.unbindStore(bound)
  }
  assert.deepEqual(seen, [
    { event: 'start', app: 'request 1', bound: 'span for SELECT' },
    { event: 'end', app: 'request 1', bound: 'span for SELECT' },
    { event: 'asyncStart', app: 'request 1', bound: 'span for SELECT' },
    { event: 'asyncEnd', app: 'request 1', bound: 'span for SELECT' },
  ])
})

test('pipegres:connect and pipegres:pool:acquire', async () => {
  const connects = record<ConnectTrace>('pipegres:connect')
  const acquires = record<AcquireTrace>('pipegres:pool:acquire')
  const { options } = await mainDatabase()
  const pool = createPool({ ...options, max: 1 })
  try {
    const first = await pool.reserve()
    const second = pool.reserve()
    await first.query('SELECT 1')
    await first.release()
    await (await second).release()
  } finally {
    connects.stop()
    acquires.stop()
    await pool.end()
  }
  const c = finished(connects.events)
  assert.equal(c.length, 1)
  assert.equal(c[0]!.database, db.config.database)
  assert.equal(c[0]!.serverPort, db.config.hosts[0]!.port)
  assert.ok(c[0]!.processId! > 0)
  const a = finished(acquires.events)
  assert.equal(a.length, 2)
  assert.deepEqual(
    a.map((x) => [x.max, x.waiting]),
    [
      [1, 0],
      [1, 0],
    ],
  )
  assert.equal(a[1]!.size, 1)
})

test('a connection that cannot be opened: the error event of pipegres:connect', async () => {
  const { events, stop } = record<ConnectTrace>('pipegres:connect')
  try {
    await assert.rejects(openClient({ port: 1, host: '127.0.0.1', connectTimeout: 2000 }))
  } finally {
    stop()
  }
  assert.deepEqual(
    events.map((e) => e.event),
    ['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
  )
})

test('nothing is published, and no context is built, while nobody subscribes', async () => {
  const ch = dc.tracingChannel('pipegres:query')
  assert.equal(ch.hasSubscribers, false)
  // A subscriber to one event only still gets it.
  const seen: QueryTrace[] = []
  const onEnd = (ctx: unknown) => seen.push(ctx as QueryTrace)
  ch.asyncEnd.subscribe(onEnd)
  try {
    await db.query('SELECT 1')
  } finally {
    ch.asyncEnd.unsubscribe(onEnd)
  }
  assert.equal(seen.length, 1)
  assert.equal(ch.hasSubscribers, false)
})
