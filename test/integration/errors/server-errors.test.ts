// test-tags: pglite
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConnectionError, PgError, type PgNotice } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { adminQuery } from '../../support/servers/test-server.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'

const db = await fileClient()

test('PgError carries every field the server sends, plus the query text', async () => {
  const text = `DO $$ BEGIN RAISE EXCEPTION USING MESSAGE = 'boom', DETAIL = 'the detail', HINT = 'the hint',
    ERRCODE = 'P0042', SCHEMA = 'sch', TABLE = 'tab', COLUMN = 'col', DATATYPE = 'typ', CONSTRAINT = 'con'; END $$`
  const err = await db.query(text).then(
    () => assert.fail('should have failed'),
    (e: unknown) => e as PgError,
  )
  assert.ok(err instanceof PgError)
  assert.equal(err.name, 'PgError')
  assert.equal(err.message, 'boom')
  assert.equal(err.severity, 'ERROR')
  assert.equal(err.severityNonLocalized, 'ERROR')
  // P0042 is in no errcodes.txt: a code SqlState does not name (a newer server's) reaches users as it is.
  assert.equal(err.code, 'P0042')
  assert.equal(err.detail, 'the detail')
  assert.equal(err.hint, 'the hint')
  assert.equal(err.schema, 'sch')
  assert.equal(err.table, 'tab')
  assert.equal(err.column, 'col')
  assert.equal(err.dataType, 'typ')
  assert.equal(err.constraint, 'con')
  assert.match(err.where ?? '', /PL\/pgSQL function inline_code_block/)
  assert.equal(typeof err.file, 'string')
  assert.equal(typeof err.line, 'number')
  assert.equal(typeof err.routine, 'string')
  assert.equal(err.query, text)
})

test('position and internal position/query are numbers and text', async () => {
  const e1 = (await db.query('SELECT nosuchcolumn').catch((e: unknown) => e)) as PgError
  assert.equal(e1.code, '42703')
  assert.equal(e1.position, 8)
  const e2 = (await db.query(`DO $$ BEGIN EXECUTE 'SELECT nosuch'; END $$`).catch((e: unknown) => e)) as PgError
  assert.equal(e2.internalQuery, 'SELECT nosuch')
  assert.equal(e2.internalPosition, 8)
})

test('constraint violations name the schema, table and constraint', async () => {
  const t = uniqueName('uniq')
  await db.query(`CREATE TABLE ${t} (id int CONSTRAINT ${t}_pk PRIMARY KEY)`)
  try {
    await db.query(`INSERT INTO ${t} VALUES (1)`)
    const e = (await db.query(`INSERT INTO ${t} VALUES (1)`).catch((x: unknown) => x)) as PgError
    assert.equal(e.code, '23505')
    assert.equal(e.schema, 'public')
    assert.equal(e.table, t)
    assert.equal(e.constraint, `${t}_pk`)
    assert.match(e.detail ?? '', /Key \(id\)=\(1\) already exists/)
  } finally {
    await db.query(`DROP TABLE ${t}`)
  }
})

test('an error at commit of the implicit transaction, after CommandComplete, fails that query', async () => {
  const t = uniqueName('defer')
  await db.query(`CREATE TABLE ${t} (id int UNIQUE DEFERRABLE INITIALLY DEFERRED)`)
  try {
    await assert.rejects(db.query(`INSERT INTO ${t} VALUES (1), (1)`), (e: unknown) => e instanceof PgError && e.code === '23505')
    assert.deepEqual((await db.query(`SELECT count(*)::int AS n FROM ${t}`)).rows, [{ n: 0 }])
  } finally {
    await db.query(`DROP TABLE ${t}`)
  }
})

test('notices reach the notice event and the onNotice option, in order with queries', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const seen: string[] = []
  const c = await openClient({ onNotice: (n: PgNotice) => seen.push(`opt:${n.message}`) })
  try {
    c.on('notice', (n) => seen.push(`evt:${n.severity}:${n.code}:${n.message}`))
    const r = c.query(`DO $$ BEGIN RAISE NOTICE 'hello %', 42; RAISE WARNING 'careful'; END $$`)
    await r
    assert.deepEqual(seen, ['opt:hello 42', 'evt:NOTICE:00000:hello 42', 'opt:careful', 'evt:WARNING:01000:careful'])
  } finally {
    await c.end()
  }
})

test('a throwing notice listener does not break the connection', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const c = await openClient()
  const thrown: unknown[] = []
  const onUncaught = (e: unknown) => thrown.push(e)
  const listeners = process.listeners('uncaughtException')
  process.removeAllListeners('uncaughtException')
  process.on('uncaughtException', onUncaught)
  try {
    c.on('notice', () => {
      throw new Error('listener bug')
    })
    await c.query(`DO $$ BEGIN RAISE NOTICE 'x'; END $$`)
    assert.deepEqual((await c.query('SELECT 1 AS ok')).rows, [{ ok: 1 }])
    await new Promise((r) => setImmediate(r))
    assert.equal(thrown.length, 1)
    assert.match(String(thrown[0]), /listener bug/)
  } finally {
    process.off('uncaughtException', onUncaught)
    for (const l of listeners) process.on('uncaughtException', l)
    await c.end()
  }
})

test('ParameterStatus keeps serverParameters current', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
  const c = await openClient()
  try {
    assert.equal(c.serverParameters.client_encoding, 'UTF8')
    assert.match(c.serverParameters.server_version ?? '', /^\d+/)
    const changes: [string, string][] = []
    c.on('parameter', (k, v) => changes.push([k, v]))
    await c.query(`SET application_name = 'renamed'`)
    assert.equal(c.serverParameters.application_name, 'renamed')
    assert.deepEqual(changes, [['application_name', 'renamed']])
  } finally {
    await c.end()
  }
})

test('processId is the backend pid', async () => {
  assert.deepEqual((await db.query('SELECT pg_backend_pid() AS pid')).rows, [{ pid: db.processId }])
})

test('a backend terminated with queries in flight: the one it was running rejects with a connection error, those behind it run on a new connection', serverOnly(NOT_ON_PGLITE.admin), async () => {
  const c = await openClient()
  let closeErr: Error | null | undefined
  c.on('disconnect', (e) => (closeErr = e))
  const pid = c.processId
  const ps = [c.query('SELECT pg_sleep(5)')]
  for (let i = 0; i < 200; i++) ps.push(c.query('SELECT $1::int AS n', [i]))
  const all = Promise.allSettled(ps)
  await new Promise((r) => setTimeout(r, 100))
  await adminQuery(`SELECT pg_terminate_backend(${pid})`)
  const settled = await all
  assert.equal(settled[0]!.status, 'rejected')
  const e = (settled[0] as PromiseRejectedResult).reason as ConnectionError
  assert.ok(e instanceof ConnectionError, String(e))
  assert.equal(e.code, 'PG_CONNECTION_CLOSED')
  assert.equal(e.mayHaveRun, true)
  settled.slice(1).forEach((s, i) => assert.deepEqual(s.status === 'fulfilled' ? s.value.rows : s.reason, [{ n: i }]))
  assert.match((settled[0] as PromiseRejectedResult).reason.message, /terminating connection due to administrator command/)
  assert.equal(((settled[0] as PromiseRejectedResult).reason.cause as PgError).code, '57P01')
  assert.equal(c.closed, false)
  assert.ok(closeErr instanceof ConnectionError)
  const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  assert.notEqual(rows[0]!.pid, pid)
  assert.equal(c.processId, rows[0]!.pid)
  await c.end()
  assert.equal(c.closed, true)
  await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
})

test('a backend terminated while idle does not throw anywhere; the next query runs on a new connection', serverOnly(NOT_ON_PGLITE.admin), async () => {
  const c = await openClient()
  const pid = c.processId
  const lost = new Promise<Error>((r) => c.on('disconnect', r))
  await adminQuery(`SELECT pg_terminate_backend(${pid})`)
  const err = await lost
  assert.ok(err instanceof ConnectionError)
  assert.equal(c.connected, false)
  const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  assert.notEqual(rows[0]!.pid, pid)
  await c.end()
})

test('connection refused is a ConnectionError naming the address', async () => {
  const { connect } = await import('../../../src/index.js')
  await assert.rejects(connect({ host: '127.0.0.1', port: 1, user: 'x', database: 'x', sslmode: 'disable' }), (e: unknown) => {
    return e instanceof ConnectionError && e.code === 'PG_CONNECTION_REFUSED' && /127\.0\.0\.1:1/.test(e.message)
  })
})
