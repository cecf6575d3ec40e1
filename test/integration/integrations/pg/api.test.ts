// pipegres/pg's Client and Pool as applications written for pg use them:
// callbacks and promises, Query objects, events, named statements, several
// statements in one string, timeouts, pool checkout, and what stays pipegres
// underneath (pool.query() pipelined over shared connections).

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import pg, { Client, Pool, Query, type Result } from '../../../../src/integrations/pg/index.js'
import { adminQuery, mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const { connectionString } = await mainDatabase()
const pool = new Pool({ connectionString, max: 3 })
after(() => pool.end())

async function client(extra: Record<string, unknown> = {}): Promise<Client> {
  const c = new Client({ connectionString, ...extra })
  await c.connect()
  return c
}

test('callbacks and promises, for connect, query and end', async () => {
  const c = new Client({ connectionString })
  await new Promise<void>((resolve, reject) => c.connect((err) => (err ? reject(err) : resolve())))
  const viaCallback = await new Promise<Result>((resolve, reject) => {
    const ret = c.query('SELECT $1::int AS n', [5], (err: Error | null, r?: Result) => (err ? reject(err) : resolve(r!)))
    assert.equal(ret, undefined, 'a query with a callback returns nothing')
  })
  assert.deepEqual(viaCallback.rows, [{ n: 5 }])
  const failed = await new Promise<Error | null>((resolve) => c.query('SELECT 1/0', (err: Error | null) => resolve(err)))
  assert.ok(failed instanceof pg.DatabaseError)
  await assert.rejects(c.connect(), /already been connected/)
  await new Promise<void>((resolve) => c.end(() => resolve()))
  await assert.rejects(c.query('SELECT 1'), /not queryable/)
})

test('Query objects emit their rows, then end; drain follows the last query', async () => {
  const c = await client()
  try {
    const rows: unknown[] = []
    const q = c.query(new Query('SELECT generate_series(1, $1::int) AS n', [3]))
    assert.ok(q instanceof Query)
    q.on('row', (row: unknown) => rows.push(row))
    const ended = await new Promise<Result>((resolve) => q.on('end', resolve))
    assert.deepEqual(rows, [{ n: 1 }, { n: 2 }, { n: 3 }])
    assert.equal(ended.rowCount, 3)
    const drained = new Promise((resolve) => c.once('drain', resolve))
    void c.query('SELECT 1')
    void c.query('SELECT 2')
    await drained
  } finally {
    await c.end()
  }
})

test('named statements: reused by name alone, refused for another text', async () => {
  const c = await client()
  try {
    const first = await c.query({ name: 'by-n', text: 'SELECT $1::int + 1 AS m', values: [1] })
    const again = await c.query({ name: 'by-n', values: [41] })
    assert.deepEqual([first.rows, again.rows], [[{ m: 2 }], [{ m: 42 }]])
    await assert.rejects(c.query({ name: 'by-n', text: 'SELECT 2', values: [] }), /Prepared statements must be unique/)
  } finally {
    await c.end()
  }
})

test('transaction status, notices, notifications and parameter changes arrive as pg gives them', async () => {
  const c = await client()
  const listener = await client()
  try {
    assert.equal(c.getTransactionStatus(), 'I')
    await c.query('BEGIN')
    assert.equal(c.getTransactionStatus(), 'T')
    await c.query('SELECT 1/0').catch(() => undefined)
    assert.equal(c.getTransactionStatus(), 'E')
    await c.query('ROLLBACK')
    const notice = new Promise<{ message: string; name: string }>((resolve) => c.once('notice', resolve))
    await c.query(`DO $$ BEGIN RAISE NOTICE 'hello %', 1; END $$`)
    const n = await notice
    assert.equal(n.message, 'hello 1')
    assert.ok(!(n instanceof Error), 'a notice is not an Error')
    const channel = uniqueName('pga_ch')
    await listener.query(`LISTEN ${channel}`)
    const got = new Promise<{ channel: string; payload: string }>((resolve) => listener.once('notification', resolve))
    await c.query('SELECT pg_notify($1, $2)', [channel, 'payload 1'])
    assert.deepEqual(await got.then((m) => [m.channel, m.payload]), [channel, 'payload 1'])
    const status = new Promise<{ parameterName: string; parameterValue: string }>((resolve) => c.connection.once('parameterStatus', resolve))
    await c.query(`SET application_name = 'changed'`)
    assert.deepEqual(await status, { parameterName: 'application_name', parameterValue: 'changed' })
  } finally {
    await Promise.all([c.end(), listener.end()])
  }
})

test('pg settings: application_name from the URL, timeouts as integers, query_timeout', async () => {
  const sep = connectionString!.includes('?') ? '&' : '?'
  const c = await client({ connectionString: `${connectionString}${sep}application_name=my+app`, statement_timeout: 3000.7, query_timeout: 200 })
  try {
    const r = await c.query('SELECT current_setting($1) AS app, current_setting($2) AS st', ['application_name', 'statement_timeout'])
    assert.deepEqual(r.rows, [{ app: 'my app', st: '3s' }])
    await assert.rejects(c.query('SELECT pg_sleep(2)'), (err: Error) => err.message === 'Query read timeout')
    assert.deepEqual((await c.query('SELECT 1 AS ok')).rows, [{ ok: 1 }])
  } finally {
    await c.end()
  }
})

test('a table altered under a reused statement: the query still succeeds, in and out of a transaction', async () => {
  const table = uniqueName('pga_alter')
  const c = await client()
  try {
    await c.query(`CREATE TABLE ${table} (a int)`)
    await c.query(`INSERT INTO ${table} VALUES (1)`)
    const sel = `SELECT * FROM ${table} WHERE a = $1`
    await c.query(sel, [1])
    await c.query(sel, [1])
    await c.query(`ALTER TABLE ${table} ADD COLUMN b int`)
    assert.deepEqual((await c.query(sel, [1])).rows, [{ a: 1, b: null }])
    await c.query('BEGIN')
    await c.query(`ALTER TABLE ${table} ADD COLUMN c int`)
    assert.deepEqual((await c.query(sel, [1])).rows, [{ a: 1, b: null, c: null }])
    await c.query('COMMIT')
    for (let i = 0; i < 3; i++) await pool.query(sel, [1])
    await pool.query(`ALTER TABLE ${table} DROP COLUMN c`)
    for (let i = 0; i < 3; i++) assert.deepEqual((await pool.query(sel, [1])).rows, [{ a: 1, b: null }])
  } finally {
    await c.query(`DROP TABLE ${table}`)
    await c.end()
  }
})

test('pool.query() is pipelined over at most max shared connections', async () => {
  const rs = await Promise.all(Array.from({ length: 2000 }, (_, i) => pool.query('SELECT $1::int AS n, pg_backend_pid() AS pid', [i])))
  rs.forEach((r, i) => assert.equal(r.rows[0].n, i))
  assert.ok(new Set(rs.map((r) => r.rows[0].pid)).size <= 3)
  assert.ok(pool.totalCount <= 3)
})

test('pool.connect(): exclusive connections, events, release once, callbacks', async () => {
  const events: string[] = []
  const p = new Pool({ connectionString, max: 2 })
  p.on('connect', () => events.push('connect'))
  p.on('acquire', () => events.push('acquire'))
  p.on('release', () => events.push('release'))
  try {
    const a = await p.connect()
    const b = await p.connect()
    const [pa, pb] = await Promise.all([a.query('SELECT pg_backend_pid() AS pid'), b.query('SELECT pg_backend_pid() AS pid')])
    assert.notEqual(pa.rows[0].pid, pb.rows[0].pid)
    assert.equal(a.processID, pa.rows[0].pid)
    let third = false
    const waiting = p.connect().then((c) => {
      third = true
      return c
    })
    await new Promise((r) => setTimeout(r, 50))
    assert.equal(third, false, 'a third checkout waits while both connections are out')
    assert.equal(p.waitingCount, 1)
    await a.query('BEGIN')
    a.release()
    assert.throws(() => a.release(), /already been released/)
    const c = await waiting
    assert.equal(c, a, 'the same connection is the same client object')
    assert.equal((await c.query('SELECT 1 AS one')).rows[0].one, 1)
    c.release()
    b.release()
    const viaCallback = await new Promise<number>((resolve, reject) =>
      p.connect((err, cl, done) => {
        if (err) return reject(err)
        cl!.query({ text: 'SELECT 7 AS n', rowMode: 'array' }, (e: Error | null, r?: Result) => {
          done!()
          if (e) reject(e)
          else resolve(((r as Result).rows[0] as number[])[0]!)
        })
      }),
    )
    assert.equal(viaCallback, 7)
    assert.deepEqual(events.slice(0, 3), ['connect', 'acquire', 'connect'])
    assert.ok(events.includes('release'))
  } finally {
    await p.end()
  }
  await assert.rejects(p.end(), /more than once/)
  await assert.rejects(p.query('SELECT 1'), /after calling end/)
})

test('a lost connection: error then end on the client, which stays closed', async () => {
  const c = await client({ application_name: uniqueName('pga_lost') })
  const events: string[] = []
  const errored = new Promise<Error>((resolve) => c.on('error', resolve))
  c.on('end', () => events.push('end'))
  await adminQuery(`SELECT pg_terminate_backend(${c.processID})`)
  const err = await errored
  assert.ok(err instanceof Error)
  await new Promise((r) => setTimeout(r, 10))
  assert.deepEqual(events, ['end'])
  await assert.rejects(c.query('SELECT 1'), /not queryable/)
  await c.end()
})

test('defaults.parseInt8 and escaping as pg does them', async () => {
  assert.equal(pg.escapeIdentifier('a"b'), '"a""b"')
  assert.equal(pg.escapeLiteral("it's"), "'it''s'")
  assert.equal(pg.escapeLiteral('back\\slash'), " E'back\\\\slash'")
  pg.defaults.parseInt8 = true
  try {
    assert.deepEqual((await pool.query('SELECT 5::int8 AS n, ARRAY[1, 2]::int8[] AS a')).rows, [{ n: 5, a: [1, 2] }])
  } finally {
    pg.defaults.parseInt8 = false
  }
  assert.deepEqual((await pool.query('SELECT 5::int8 AS n')).rows, [{ n: '5' }])
})

test('Buffer parameters: the same bytes on every execution of a statement', async () => {
  const bytes = Buffer.from([0, 1, 0x5c, 0xff])
  for (let i = 0; i < 3; i++) {
    const r = await pool.query('SELECT $1::bytea AS b, length($1::bytea) AS n', [bytes])
    assert.deepEqual(r.rows[0], { b: bytes, n: 4 })
  }
})
