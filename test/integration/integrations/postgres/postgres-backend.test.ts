// pipegres/postgres against a server: sql.largeObject(), result.state and the
// connection number the debug function gets, and unsafe() texts run by the
// extended protocol with the values the simple one gives.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { inspect } from 'node:util'
import dc from 'node:diagnostics_channel'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import postgres from '../../../../src/integrations/postgres/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'

const { connectionString, source } = await mainDatabase()
const skip = source === 'PGlite' ? 'pipegres/postgres opens sockets of its own' : false
const debugged: [number, string][] = []
const sql = postgres(connectionString ?? {}, { max: 2, onnotice: () => {}, debug: (id, query) => void debugged.push([id, query]) })
after(() => sql.end())

const md5 = (b: Uint8Array): string => createHash('md5').update(b).digest('hex')

test('largeObject(): written through writable(), read back through readable(), its size and position', { skip }, async () => {
  const data = randomBytes(100_000)
  const lo = await sql.largeObject()
  assert.ok(Number.isInteger(lo.oid) && lo.oid > 0)
  await pipeline(Readable.from([data.subarray(0, 40_000), data.subarray(40_000)]), await lo.writable())
  assert.deepEqual([...(await lo.size())], [{ position: '100000', size: '100000' }])
  await lo.seek(0)
  const chunks: Buffer[] = []
  for await (const chunk of await lo.readable({ highWaterMark: 8192 })) chunks.push(chunk as Buffer)
  assert.equal(md5(Buffer.concat(chunks)), md5(data))
  assert.equal((await lo.tell())[0]!.lo_tell64, '100000')
  await lo.close()

  // Opened again, read only: a range, read() and seek() from the end.
  const again = await sql.largeObject(lo.oid, 0x40000)
  const part: Buffer[] = []
  for await (const chunk of await again.readable({ start: 10, end: 30 })) part.push(chunk as Buffer)
  assert.deepEqual(Buffer.concat(part), data.subarray(10, 30))
  await again.seek(-5, 2)
  assert.deepEqual((await again.read(100))[0]!.data, data.subarray(-5))
  await assert.rejects(again.write(Buffer.from('x')), /permission denied|read mode|not opened for writing/i)
  await assert.rejects(again.close(), /current transaction is aborted|read mode|not opened for writing/i)
  await sql`select lo_unlink(${lo.oid})`
})

test('largeObject(): truncate, a missing object, bad arguments; the connection goes back to the pool', { skip }, async () => {
  const lo = await sql.largeObject()
  await lo.write(Buffer.from('hello world'))
  await lo.truncate(5)
  await lo.seek(0)
  assert.equal((await lo.read(100))[0]!.data.toString(), 'hello')
  await lo.close()
  await lo.close() // a second close() is the first one's outcome
  await sql`select lo_unlink(${lo.oid})`
  await assert.rejects(sql.largeObject(lo.oid), (e: { code?: string }) => e.code === '42704')
  await assert.rejects(sql.largeObject(-1), /OID of a large object/)
  await assert.rejects(sql.largeObject(undefined, 7), /mode must be/)
  // Every transaction above ended: both connections of the pool serve queries.
  assert.equal((await Promise.all([sql`select 1 as x`, sql`select 2 as x`])).length, 2)
})

test('result.state is the backend of the connection that ran the query; its secret never prints', { skip }, async () => {
  const [a, b] = await Promise.all([sql`select pg_backend_pid() as pid`, sql`select pg_backend_pid() as pid`])
  assert.equal(a.state.pid, a[0]!.pid)
  assert.equal(b.state.pid, b[0]!.pid)
  assert.notEqual(a.state.pid, b.state.pid, 'two queries issued together go to the two connections')
  const secret = a.state.secret
  assert.ok(typeof secret === 'number' || Buffer.isBuffer(secret), 'the cancel key: a number (protocol 3.0) or its bytes (3.2)')
  const key = typeof secret === 'number' ? String(secret) : secret!.toString('hex')
  for (const shown of [inspect(a), inspect(a.state), JSON.stringify(a.state)]) assert.ok(!shown.includes(key), shown)
  assert.match(inspect(a.state), new RegExp(`pid: ${a.state.pid}`))

  const simple = await sql.unsafe('select pg_backend_pid() as pid; select 1')
  assert.equal(simple[0]!.state.pid, simple[0]![0]!.pid)
  await sql.begin(async (tx) => {
    const r = await tx`select pg_backend_pid() as pid`
    assert.equal(r.state.pid, r[0]!.pid)
  })
  const reserved = await sql.reserve()
  const rows: unknown[] = []
  await reserved`select pg_backend_pid() as pid from generate_series(1, 3)`.cursor(2, (rows_: unknown[]) => {
    const batch = rows_ as { pid: number }[] & { state: { pid: number | null } }
    rows.push(batch.state.pid === batch[0]!.pid)
  })
  reserved.release()
  assert.deepEqual(rows, [true, true])
})

test('debug gets the number of the connection that ran the query', { skip }, async () => {
  debugged.length = 0
  const [a, b] = await Promise.all([sql`select pg_backend_pid() as pid, ${1}::int as n`, sql`select pg_backend_pid() as pid, ${2}::int as n`])
  const again = await sql`select pg_backend_pid() as pid, ${3}::int as n`
  assert.equal(debugged.length, 3)
  const ids = debugged.map(([id]) => id)
  assert.ok(ids.every((id) => Number.isInteger(id) && id > 0), String(ids))
  assert.notEqual(ids[0], ids[1])
  // The same connection, the same number.
  const byPid = new Map([[a[0]!.pid, ids[0]], [b[0]!.pid, ids[1]]])
  assert.equal(byPid.get(again[0]!.pid), ids[2])
  assert.equal(debugged[0]![1], 'select pg_backend_pid() as pid, $1::int as n')
})

test('unsafe() without parameters: one statement by the extended protocol, values as the simple protocol gives them', { skip }, async () => {
  const text = `select 1::int8 as a, 1.5::numeric as b, '2024-01-02 03:04:05+00'::timestamptz as c, '{1,2}'::int[] as d, '{"x":1}'::jsonb as e,
    '\\x0102'::bytea as f, '1 day'::interval as g, 1.25::float4 as h, '2024-01-02 03:04:05'::timestamp as i, 'a;b' as "j;k", $$;$$ as l -- ;
    ;`
  const extended = await sql.unsafe(text)
  const simple = await sql.unsafe(text, [], { simple: true })
  assert.deepEqual([...extended], [...simple])
  assert.equal(extended[0]!.l, ';')
  // Several statements: the simple protocol, a result each.
  const two = await sql.unsafe("select 1 as x; select ';' as y")
  assert.deepEqual(two.map((r: unknown[]) => [...r]), [[{ x: 1 }], [{ y: ';' }]])
  // Prepared on request, and run again from the statement.
  const prepared = await sql.unsafe('select 42 as x', [], { prepare: true })
  assert.equal(prepared.statement.name !== '', true)
  assert.deepEqual([...(await sql.unsafe('select 42 as x', [], { prepare: true }))], [{ x: 42 }])
  assert.deepEqual([...(await sql.unsafe('  -- nothing\n'))], [])
})

test('cancel() stops its query alone: running, written behind another, or not yet sent', { skip }, async () => {
  const one = postgres(connectionString ?? {}, { max: 1, onnotice: () => {} })
  try {
    const running = one`select pg_sleep(5)`
    const outcome = running.then(() => 'ran', (e: unknown) => (e as { code?: string }).code)
    const behind = one`select pg_sleep(0.2), 1 as a`
    const skipped = one`select 2 as b`
    const after = one`select 3 as c`
    const settled = Promise.allSettled([behind, skipped, after])
    await new Promise((r) => setTimeout(r, 100))
    const t0 = performance.now()
    running.cancel()
    skipped.cancel()
    assert.equal(await outcome, '57014')
    assert.ok(performance.now() - t0 < 2500, 'the running query was cancelled on the server')
    const [b, s, a] = await settled
    // Before PostgreSQL 18 a cancel is two SIGINTs, and on a busy machine the second can land on
    // the query behind the target: it fails with query_canceled (see test/support/cancel-checks.ts).
    const major = Math.floor(Number((await one`select current_setting('server_version_num') as v`)[0]!.v) / 10_000)
    if (b.status === 'rejected') assert.ok(major < 18 && (b.reason as { code?: string }).code === '57014', `the query behind failed on PostgreSQL ${major}: ${String(b.reason)}`)
    assert.equal(s.status === 'rejected' && (s.reason as { code?: string }).code, '57014')
    assert.equal(a.status === 'fulfilled' && (a.value as unknown as { c: number }[])[0]!.c, 3)
    const early = one`select 1`
    early.cancel()
    assert.equal(await early.then(() => 'ran', (e: unknown) => (e as { code?: string }).code), '57014')
  } finally {
    await one.end()
  }
})

test('result.state while queries are traced; a trace never shows the connection', { skip }, async () => {
  const seen: string[] = []
  const handlers = {
    start: () => {},
    end: () => {},
    asyncStart: () => {},
    asyncEnd: (ctx: object) => void seen.push(inspect(ctx)),
    error: () => {},
  }
  const channel = dc.tracingChannel('pipegres:query')
  channel.subscribe(handlers)
  try {
    const r = await sql`select pg_backend_pid() as pid`
    assert.equal(r.state.pid, r[0]!.pid)
  } finally {
    channel.unsubscribe(handlers)
  }
  assert.ok(seen.length > 0 && seen.every((t) => !t.includes('connection') && !t.includes('secret')), seen.join('\n'))
})

test('file(): a text read from a file runs as a query, with or without parameters, awaited twice', { skip }, async () => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dir = await mkdtemp(join(tmpdir(), 'pgjs-file-'))
  try {
    await writeFile(join(dir, 'one.sql'), 'select 1 as x')
    await writeFile(join(dir, 'param.sql'), 'select $1::text as x')
    const q = sql.file(join(dir, 'one.sql'))
    assert.deepEqual([...(await q)], [{ x: 1 }])
    assert.equal(await q, await q, 'the same result each time')
    assert.deepEqual([...(await sql.file(join(dir, 'param.sql'), ['hello']))], [{ x: 'hello' }])
    let seen: unknown
    await sql.file(join(dir, 'one.sql'), { cache: false }).forEach((row) => void (seen = (row as { x: number }).x))
    assert.equal(seen, 1)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
