// The row sinks of query/ on their own, without a server, a connection or an
// exchange: each is handed what the exchange would hand it (the columns, the
// DataRow bodies, the end) and checked for what it makes of them. The
// exchange's side (which messages reach a sink, and when) is in
// sink-messages.test.ts.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { RequestContext } from '../../../src/connection/request.js'
import { ProtocolError } from '../../../src/errors.js'
import { decodeRowDescription } from '../../../src/protocol/backend.js'
import { BatchStatement } from '../../../src/query/batch-statement.js'
import { collectSink, columnsSink } from '../../../src/query/collect-sink.js'
import { CursorSink, StreamSink, type BatchConsumer, type RowConsumer } from '../../../src/query/consumer-sinks.js'
import { describeSink } from '../../../src/query/describe-sink.js'
import { Exchange, type QuerySettings } from '../../../src/query/exchange.js'
import { RawSink, type MessageConsumer } from '../../../src/query/raw-sink.js'
import type { QueryRowMode } from '../../../src/query/result.js'
import type { RowSink, RowSource } from '../../../src/query/row-sink.js'
import type { Session } from '../../../src/query/session.js'
import { SharedSink, type SharedOutcome } from '../../../src/query/shared-read.js'
import { TypeCatalog } from '../../../src/types/catalog.js'
import { dataRowBody, int32, rowDescriptionBody, type Column } from '../../support/fakes/backend-messages.js'

const catalog = new TypeCatalog()

/** What a sink sees of its request: settings, a session with the catalog, and what it was asked to do. */
class Source implements RowSource {
  readonly text = 'SELECT'
  readonly declared = null
  readonly queued = performance.now()
  readonly settings: QuerySettings
  readonly session = { catalog } as unknown as Session
  gaveUp: Error | null = null
  dropped = false

  constructor(rowMode: QueryRowMode = 'object', limits?: QuerySettings['limits']) {
    this.settings = { rowMode, prepare: true, view: catalog.view(), limits }
  }

  giveUp(x: Exchange, err: Error): void {
    x.failure ??= err
    this.gaveUp = err
  }

  dropRows(): void {
    this.dropped = true
  }
}

/** An exchange on no connection, its columns known and its plan built (as the exchange leaves it before begin()). */
function exchange(columns: readonly Column[], formats: number[] = []): Exchange {
  const x = new Exchange({ writeStamp: { at: performance.now() } } as unknown as RequestContext)
  const body = rowDescriptionBody(columns)
  x.fields = decodeRowDescription(body, 0, body.length)
  x.formats = formats
  x.plan = catalog.view().plan(x.fields, formats)
  x.planVersion = catalog.version
  return x
}

/** Feeds rows to a sink as the exchange does: begin, each DataRow body, complete. */
function feed<T>(sink: RowSink<T>, q: RowSource, x: Exchange, rows: readonly (readonly (Uint8Array | string | null)[])[], tag = `SELECT ${rows.length}`): void {
  sink.begin(q, x)
  for (const r of rows) {
    const body = dataRowBody(r)
    sink.row(q, x, body, 0, body.length)
  }
  x.tag = tag
  const tagBody = new TextEncoder().encode(`${tag}\0`)
  sink.complete(q, x, tagBody, 0, tagBody.length)
}

test('collect: rows decoded by the plan and kept in the result, with the command tag', () => {
  const q = new Source()
  const x = exchange([['n', 23], 't'])
  feed(collectSink, q, x, [['1', 'a'], [null, 'b']])
  const r = collectSink.outcome(q, x)
  assert.deepEqual(r.rows, [
    { n: 1, t: 'a' },
    { n: null, t: 'b' },
  ])
  assert.equal(r.command, 'SELECT')
  assert.equal(r.rowCount, 2)
  assert.deepEqual(
    r.fields.map((f) => f.name),
    ['n', 't'],
  )
})

test('collect: a value that fails to decode fails the query, and the rows after it are still read (the stream stays in step)', () => {
  const q = new Source('array')
  // int4 in binary is 4 bytes: 2 cannot be one.
  const x = exchange([['n', 23]], [1])
  feed(collectSink, q, x, [[Uint8Array.of(0, 1)], [int32(7)]])
  assert.ok(x.failure !== null && !(x.failure instanceof ProtocolError), String(x.failure))
  assert.deepEqual(x.rows, [[7]])
  assert.equal(q.gaveUp, null, 'a collected query is not stopped: its rows are few or already on their way')
})

test('collect: a column whose type the catalog does not know holds the rows as bytes while it is looked up', async () => {
  const looked: number[][] = []
  const q = new Source()
  ;(q as { session: Session }).session = { catalog, lookupTypes: (oids: number[]) => (looked.push(oids), Promise.resolve()) } as unknown as Session
  const x = exchange([['v', 987654]])
  x.planUnknown = [987654]
  collectSink.begin(q, x)
  assert.deepEqual(looked, [[987654]])
  assert.deepEqual(x.held, [], 'rows are held (by the exchange) until the lookup is over')
  assert.ok(x.typesLookup !== null)
})

test('columns: each column in one array, nulls in a bitmap beside it', () => {
  const q = new Source('columns')
  const x = exchange([['n', 23]], [1])
  feed(columnsSink, q, x, [[int32(5)], [null], [int32(-2)]])
  const r = columnsSink.outcome(q, x)
  assert.deepEqual(Array.from(r.columns!['n'] as Int32Array), [5, 0, -2])
  assert.ok(r.nulls?.['n'] !== undefined)
  assert.deepEqual(r.rows, [])
})

test('stream: rows decoded as they arrive and handed over one by one, the connection given to the consumer at begin', () => {
  const seen: unknown[] = []
  let begun: unknown = null
  const consumer: RowConsumer = { begin: (fields, ctx) => (begun = { fields: fields.length, ctx }), row: (r) => seen.push(r) }
  const sink = new StreamSink(consumer)
  const q = new Source()
  const x = exchange(['g'])
  feed(sink, q, x, [['1'], ['2']])
  assert.deepEqual(seen, [{ g: '1' }, { g: '2' }])
  assert.deepEqual(begun, { fields: 1, ctx: x.ctx })
  assert.equal(sink.streams, true)
  assert.deepEqual(sink.outcome(q, x).rows, [], 'nothing is kept')
})

test('stream: a row that fails to decode is not handed over; the query gives up (its rest is dropped, the server stops it)', () => {
  const seen: unknown[] = []
  const sink = new StreamSink({ begin: () => {}, row: (r) => seen.push(r) })
  const q = new Source('array')
  const x = exchange([['n', 23]], [1])
  sink.begin(q, x)
  const bad = dataRowBody([Uint8Array.of(9)])
  sink.row(q, x, bad, 0, bad.length)
  assert.deepEqual(seen, [])
  assert.ok(q.gaveUp !== null && x.failure === q.gaveUp)
})

test('stream: a DataRow that breaks the protocol is a ProtocolError for the connection, not a failure of the query', () => {
  const sink = new StreamSink({ begin: () => {}, row: () => {} })
  const q = new Source()
  const x = exchange(['a', 'b'])
  sink.begin(q, x)
  // Two columns described, a body that ends inside the first.
  const broken = Uint8Array.of(0, 2, 0, 0, 0, 9, 0x61)
  assert.throws(() => sink.row(q, x, broken, 0, broken.length), ProtocolError)
})

test('cursor: each PortalSuspended ends a batch; CommandComplete ends the last', () => {
  const events: string[] = []
  const consumer: BatchConsumer = { begin: () => events.push('begin'), row: (r) => events.push(JSON.stringify(r)), batch: (last) => events.push(last ? 'last' : 'batch') }
  const sink = new CursorSink(consumer)
  const q = new Source('array')
  const x = exchange(['g'])
  sink.begin(q, x)
  for (const v of ['1', '2']) {
    const b = dataRowBody([v])
    sink.row(q, x, b, 0, b.length)
  }
  sink.suspended()
  const b = dataRowBody(['3'])
  sink.row(q, x, b, 0, b.length)
  sink.complete()
  assert.deepEqual(events, ['begin', '["1"]', '["2"]', 'batch', '["3"]', 'last'])
})

test('raw: the portal description, rows and end passed on as they came; formats and chunk ends are the consumer\'s', () => {
  const messages: string[] = []
  let chunks = 0
  let begun: unknown = null
  const consumer: MessageConsumer = {
    formats: (fields) => fields.map(() => 1),
    begin: (ctx) => (begun = ctx),
    message: (buf, start, end) => messages.push(Buffer.from(buf.subarray(start, end)).toString('hex')),
    error: () => messages.push('error'),
    chunkEnd: () => chunks++,
  }
  const sink = new RawSink(consumer)
  const q = new Source()
  const x = exchange(['a'])
  assert.deepEqual(sink.formats(x.fields), [1])
  const desc = rowDescriptionBody(['a'])
  sink.begin(q, x)
  sink.description(desc, 0, desc.length)
  const row = dataRowBody(['x'])
  sink.row(q, x, row, 0, row.length)
  const tag = new TextEncoder().encode('SELECT 1\0')
  sink.complete(q, x, tag, 0, tag.length)
  sink.chunkEnd()
  assert.equal(begun, x.ctx)
  assert.deepEqual(messages, [Buffer.from(desc).toString('hex'), Buffer.from(row).toString('hex'), Buffer.from(tag).toString('hex')])
  assert.equal(chunks, 1)
  sink.errorResponse({ severity: 'ERROR', code: '22012', message: 'division by zero' } as never)
  assert.equal(messages.at(-1), 'error')
})

test('raw: a DataRow whose column count differs from the description is never passed on', () => {
  const passed: number[] = []
  const sink = new RawSink({ formats: () => [], begin: () => {}, message: (_b, s, e) => passed.push(e - s), error: () => {}, chunkEnd: () => {} })
  const q = new Source()
  const x = exchange(['a', 'b'])
  sink.begin(q, x)
  const row = dataRowBody(['only one'])
  assert.throws(() => sink.row(q, x, row, 0, row.length), /DataRow with 1 columns where the RowDescription has 2/)
  assert.deepEqual(passed, [])
})

test('shared: rows kept as copies of their bytes, each caller decoding a result of its own', () => {
  let ended: [SharedOutcome | null, Error | null] | null = null
  const sink = new SharedSink((o, e) => (ended = [o, e]))
  const q = new Source()
  const x = exchange([['n', 23]])
  sink.begin(q, x)
  const body = dataRowBody(['41'])
  sink.row(q, x, body, 0, body.length)
  // The socket's buffer is reused for the next read: the kept row must not change with it.
  body.fill(0)
  x.tag = 'SELECT 1'
  const outcome = sink.outcome(q, x)
  sink.ended(outcome, null)
  assert.ok(ended !== null && ended[0] === outcome && ended[1] === null)
  const a = outcome.resultFor(performance.now())
  const b = outcome.resultFor(performance.now())
  assert.deepEqual(a.rows, [{ n: 41 }])
  assert.notEqual(a.rows[0], b.rows[0], 'each caller gets objects of its own')
  assert.equal(sink.copiesRows, true)
})

test('describe: the statement\'s parameters and columns; rows cannot come', () => {
  const q = new Source()
  const x = exchange([['id', 23]])
  x.paramTypes = [25, 20]
  assert.deepEqual(describeSink.outcome(q, x), { parameters: [25, 20], fields: x.fields })
  assert.throws(() => describeSink.begin(), ProtocolError)
  assert.throws(() => describeSink.row(), ProtocolError)
})

test('batch: a statement collects its rows as query() does, and hands its end and a halt to its batch', () => {
  const told: string[] = []
  const s = new BatchStatement(0, 'SELECT', [], new Source('array').settings, null)
  s.owner = { statementSettled: () => told.push('settled'), halt: () => told.push('halt') }
  const q = new Source('array')
  const x = exchange(['g'])
  feed(s, q, x, [['1']])
  const result = s.outcome(q, x)
  assert.deepEqual(result.rows, [['1']])
  s.halt(x)
  s.ended(result)
  assert.deepEqual(told, ['halt', 'settled'])
  assert.equal(s.result(), result)
  assert.equal(s.req.sink, s, 'the statement is the sink of its own exchange')
})

test('a server error reaches only a sink that passes messages on', () => {
  const sinks: RowSink<unknown>[] = [collectSink, columnsSink, describeSink, new StreamSink({ begin: () => {}, row: () => {} }), new SharedSink(() => {})]
  for (const s of sinks) assert.equal(s.errorResponse, undefined)
  assert.equal(typeof new RawSink({ formats: () => [], begin: () => {}, message: () => {}, error: () => {}, chunkEnd: () => {} }).errorResponse, 'function')
})
