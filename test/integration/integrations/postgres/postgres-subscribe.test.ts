// test-tags: slow
// pipegres/postgres's sql.subscribe() against a server with wal_level=logical:
// the rows and info postgres.js gives for inserts, updates and deletes under
// each replica identity, patterns that pick operations, tables and rows, the
// transform option, reconnection (onsubscribe again, onerror told), and
// unsubscribe() and sql.end() closing the replication connection. Each test
// streams a publication of its own table, so files running beside it are not
// seen. postgres.js's own subscribe tests run in `npm run test:postgres-suite`.

import { after, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import postgres, { type PostgresOptions, type Sql, type SubscribeEvent, type SubscribeRow } from '../../../../src/integrations/postgres/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const { connectionString, source } = await mainDatabase()
const admin = source === 'PGlite' ? undefined : postgres(connectionString ?? {}, { max: 2, onnotice: () => {} })
let skip: string | false = admin === undefined ? 'pipegres/postgres opens sockets of its own, and PGlite streams no WAL' : false
if (admin !== undefined) {
  const [row] = await admin`show wal_level`
  if (row!.wal_level !== 'logical') skip = `the server's wal_level is ${String(row!.wal_level)}, and logical decoding needs logical`
}
const instances: Sql[] = []
after(async () => {
  for (const sql of instances) await sql.end({ timeout: 5 })
  await admin?.end()
})

/** An instance streaming `publication` (ended after the file, if a test did not end it). */
function instance(publication: string, options: PostgresOptions = {}): Sql {
  const sql = postgres(connectionString ?? {}, { max: 2, onnotice: () => {}, publications: publication, ...options })
  instances.push(sql)
  return sql
}

/** A table (columns as SQL) and a publication of it, both dropped when the test ends. */
async function published(t: TestContext, columns: string): Promise<{ table: string; publication: string }> {
  const table = uniqueName('pgjs_sub_t')
  const publication = uniqueName('pgjs_sub_p')
  await admin!.unsafe(`create table ${table} (${columns})`)
  await admin!.unsafe(`create publication ${publication} for table ${table}`)
  t.after(async () => {
    await admin!.unsafe(`drop publication if exists ${publication}`)
    await admin!.unsafe(`drop table if exists ${table}`)
  })
  return { table, publication }
}

/** Polls `check` every 20 ms; fails naming `what` after `ms`. */
async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

type Seen = [command: string, row: SubscribeRow | null, info: SubscribeEvent]

/** A subscriber that keeps what it was given. */
function recorder(): { seen: Seen[]; fn: (row: SubscribeRow | null, info: SubscribeEvent) => void; count: (n: number) => Promise<void> } {
  const seen: Seen[] = []
  return {
    seen,
    fn: (row, info) => seen.push([info.command, row, info]),
    count: (n) => waitFor(`${n} changes (${seen.length} so far: ${JSON.stringify(seen.map((s) => [s[0], s[1]]))})`, () => seen.length >= n),
  }
}

/** The server process of a backend, while it exists. */
const alive = async (pid: number): Promise<boolean> => (await admin!`select 1 from pg_stat_activity where pid = ${pid}`).length > 0

test('inserts, updates and deletes come with the row and postgres.js info, under each replica identity', { skip, timeout: 60_000 }, async (t) => {
  const { table, publication } = await published(t, 'id int primary key, name text, big int8, doc jsonb, at timestamptz')
  const sql = instance(publication)
  const r = recorder()
  const subscribed = await sql.subscribe('*', r.fn)
  assert.equal(typeof subscribed.state.pid, 'number')
  await sql`insert into ${sql(table)} values (1, 'a', 9007199254740993, '{"k":[1]}', '2024-02-29T12:00:00Z')`
  await sql`update ${sql(table)} set name = 'b'`
  await sql`update ${sql(table)} set id = 2`
  await sql`delete from ${sql(table)}`
  await sql`alter table ${sql(table)} replica identity full`
  await sql`insert into ${sql(table)} (id, name) values (3, 'c')`
  await sql`update ${sql(table)} set name = 'd'`
  await sql`delete from ${sql(table)}`
  await r.count(7)

  const at = new Date('2024-02-29T12:00:00Z')
  const first = { id: 1, name: 'a', big: '9007199254740993', doc: { k: [1] }, at }
  const simple = r.seen.map(([command, row, info]) => ({ command, row, key: 'key' in info ? info.key : undefined, old: 'old' in info ? info.old : undefined }))
  assert.deepEqual(simple, [
    { command: 'insert', row: first, key: undefined, old: undefined },
    // The key did not change: no old row.
    { command: 'update', row: { ...first, name: 'b' }, key: false, old: null },
    // The key changed: the old key, the other columns null (as the server sends them).
    { command: 'update', row: { ...first, id: 2, name: 'b' }, key: true, old: { id: 1, name: null, big: null, doc: null, at: null } },
    { command: 'delete', row: { id: 2, name: null, big: null, doc: null, at: null }, key: true, old: undefined },
    { command: 'insert', row: { id: 3, name: 'c', big: null, doc: null, at: null }, key: undefined, old: undefined },
    // REPLICA IDENTITY FULL: the whole old row.
    { command: 'update', row: { id: 3, name: 'd', big: null, doc: null, at: null }, key: false, old: { id: 3, name: 'c', big: null, doc: null, at: null } },
    { command: 'delete', row: { id: 3, name: 'd', big: null, doc: null, at: null }, key: false, old: undefined },
  ])

  const relation = r.seen[0]![2].relation
  assert.equal(relation.schema, 'public')
  assert.equal(relation.table, table)
  assert.deepEqual(
    relation.columns.map((c) => [c.name, c.type, c.key]),
    [['id', 23, 1], ['name', 25, 0], ['big', 20, 0], ['doc', 3802, 0], ['at', 1184, 0]],
  )
  assert.deepEqual(relation.keys.map((c) => c.name), ['id'])
  assert.deepEqual(r.seen[3]![2].relation, relation, 'the same description with each change until the table changes')
  // Under REPLICA IDENTITY FULL every column is part of the identity.
  assert.deepEqual(r.seen[6]![2].relation.keys.map((c) => c.name), ['id', 'name', 'big', 'doc', 'at'])

  await subscribed.unsubscribe()
  await sql.end()
})

test('a TOASTed value an update left alone is undefined, as in postgres.js', { skip, timeout: 60_000 }, async (t) => {
  const { table, publication } = await published(t, 'id int primary key, n int, long text')
  const sql = instance(publication)
  const r = recorder()
  const { unsubscribe } = await sql.subscribe(`update:${table}`, r.fn)
  // Random hex, too long to stay in the row even compressed: stored out of line.
  await sql`insert into ${sql(table)} select 1, 0, string_agg(md5(random()::text), '') from generate_series(1, 400)`
  await sql`update ${sql(table)} set n = 1`
  await r.count(1)
  const [, row] = r.seen[0]!
  assert.deepEqual(Object.keys(row!), ['id', 'n', 'long'])
  assert.equal(row!.long, undefined)
  assert.equal(row!.n, 1)
  await unsubscribe()
})

test('patterns pick the operation, the table and the row by its key', { skip, timeout: 60_000 }, async (t) => {
  const { table, publication } = await published(t, 'id int, part text, note text, primary key (id, part)')
  const other = await published(t, 'id int primary key')
  const sql = instance(`${publication}, ${other.publication}`)
  const patterns = ['*', 'insert', 'UPDATE', `delete:${table}`, `*:public.${table}`, `update:${table}=2,b`, `*:${other.table}`, `insert:${other.table}=7`, `*:elsewhere.${table}`]
  const got = new Map(patterns.map((p) => [p, recorder()]))
  const handles = await Promise.all(patterns.map((p) => sql.subscribe(p, got.get(p)!.fn)))
  assert.ok(handles.every((h) => h.state === handles[0]!.state), 'one replication connection for every subscriber of the instance')
  await sql`insert into ${sql(table)} values (1, 'a', 'x'), (2, 'b', 'y')`
  await sql`update ${sql(table)} set note = 'z'`
  await sql`delete from ${sql(table)} where id = 1`
  await sql`insert into ${sql(other.table)} values (7), (8)`
  await got.get('*')!.count(7)
  const seen = (p: string): string[] => got.get(p)!.seen.map(([command, row]) => `${command} ${String(row!.id)}`)
  assert.deepEqual(seen('*'), ['insert 1', 'insert 2', 'update 1', 'update 2', 'delete 1', 'insert 7', 'insert 8'])
  assert.deepEqual(seen('insert'), ['insert 1', 'insert 2', 'insert 7', 'insert 8'])
  assert.deepEqual(seen('UPDATE'), ['update 1', 'update 2'])
  assert.deepEqual(seen(`delete:${table}`), ['delete 1'])
  assert.deepEqual(seen(`*:public.${table}`), ['insert 1', 'insert 2', 'update 1', 'update 2', 'delete 1'])
  assert.deepEqual(seen(`update:${table}=2,b`), ['update 2'])
  assert.deepEqual(seen(`*:${other.table}`), ['insert 7', 'insert 8'])
  assert.deepEqual(seen(`insert:${other.table}=7`), ['insert 7'])
  assert.deepEqual(seen(`*:elsewhere.${table}`), [])

  // Unsubscribing one leaves the others, and the connection, as they were.
  const pid = handles[0]!.state.pid!
  await handles[1]!.unsubscribe()
  await sql`insert into ${sql(table)} values (3, 'c', 'w')`
  await got.get('*')!.count(8)
  assert.equal(got.get('insert')!.seen.length, 4)
  assert.equal(handles[0]!.state.pid, pid)
  await sql.end()
})

test('the transform option renames the columns and passes values and rows through its functions', { skip, timeout: 60_000 }, async (t) => {
  const { table, publication } = await published(t, 'id int primary key, name_in_camel text')
  const sql = instance(publication, {
    transform: {
      column: { from: postgres.toCamel, to: postgres.fromCamel },
      value: { from: (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : v) },
      row: { from: (row: Record<string, unknown>) => ({ ...row, seen: true }) },
    },
  })
  const r = recorder()
  const { unsubscribe } = await sql.subscribe(`*:${table}`, r.fn)
  await sql`insert into ${sql(table)} ${sql({ id: 1, nameInCamel: 'murray' })}`
  await sql`alter table ${sql(table)} replica identity full`
  await sql`update ${sql(table)} set name_in_camel = 'rothbard'`
  await r.count(2)
  assert.deepEqual(r.seen[0]![1], { id: 1, nameInCamel: 'MURRAY', seen: true })
  assert.deepEqual(r.seen[1]![1], { id: 1, nameInCamel: 'ROTHBARD', seen: true })
  const info = r.seen[1]![2]
  assert.ok(info.command === 'update')
  assert.deepEqual(info.old, { id: 1, nameInCamel: 'MURRAY', seen: true })
  assert.deepEqual(info.relation.columns.map((c) => c.name), ['id', 'nameInCamel'])
  await unsubscribe()
})

test('after a lost connection it reconnects, calls onsubscribe again and tells onerror', { skip, timeout: 60_000 }, async (t) => {
  const { table, publication } = await published(t, 'id int primary key')
  const sql = instance(publication)
  const r = recorder()
  let onsubscribes = 0
  const errors: object[] = []
  const handle = await sql.subscribe(`insert:${table}`, r.fn, () => onsubscribes++, (err) => errors.push(err as object))
  assert.equal(onsubscribes, 1)
  await sql`insert into ${sql(table)} values (1)`
  await r.count(1)

  // The subscription's own sql.close(): closed on purpose, so no error.
  const first = handle.state.pid!
  await handle.sql.close()
  await waitFor('onsubscribe after sql.close()', () => onsubscribes === 2)
  assert.notEqual(handle.state.pid, first, 'a new replication connection')
  await sql`insert into ${sql(table)} values (2)`
  await r.count(2)
  assert.equal(errors.length, 0, String(errors))

  // The walsender terminated: a lost connection, told to onerror.
  const second = handle.state.pid!
  await admin!`select pg_terminate_backend(${second})`
  await waitFor('onsubscribe after the walsender was terminated', () => onsubscribes === 3)
  assert.ok(handle.state.pid !== undefined && handle.state.pid !== second)
  assert.equal(errors.length, 1)
  assert.ok(errors[0] instanceof Error, String(errors[0]))
  await sql`insert into ${sql(table)} values (3)`
  await r.count(3)
  assert.deepEqual(r.seen.map(([, row]) => row!.id), [1, 2, 3])
  await handle.unsubscribe()
})

test('the last unsubscribe() and sql.end() close the replication connection', { skip, timeout: 60_000 }, async (t) => {
  const { table, publication } = await published(t, 'id int primary key')
  const sql = instance(publication)
  const a = recorder()
  const b = recorder()
  const ha = await sql.subscribe('*', a.fn)
  const hb = await sql.subscribe(`*:${table}`, b.fn)
  const pid = ha.state.pid!
  await ha.unsubscribe()
  await ha.unsubscribe() // twice: nothing more happens
  await sql`insert into ${sql(table)} values (1)`
  await b.count(1)
  assert.equal(a.seen.length, 0)
  assert.ok(await alive(pid), 'one subscriber left: the connection stays')
  await hb.unsubscribe()
  await waitFor('the walsender gone after the last unsubscribe()', async () => !(await alive(pid)))
  await sql`insert into ${sql(table)} values (2)`

  // Subscribing again starts a new connection, which sql.end() closes.
  const c = recorder()
  const hc = await sql.subscribe('insert', c.fn)
  const again = hc.state.pid!
  assert.notEqual(again, pid)
  await sql`insert into ${sql(table)} values (3)`
  await c.count(1)
  assert.deepEqual(c.seen.map(([, row]) => row!.id), [3], 'nothing from before the subscription')
  assert.equal(b.seen.length, 1)
  await sql.end()
  await waitFor('the walsender gone after sql.end()', async () => !(await alive(again)))
  await assert.rejects(sql.subscribe('*', () => {}), { code: 'CONNECTION_ENDED' })
})

test('bad arguments and a missing publication are refused with the cause named', { skip, timeout: 60_000 }, async () => {
  const sql = instance(uniqueName('pgjs_sub_missing'))
  await assert.rejects(sql.subscribe('inserts', () => {}), { name: 'TypeError', message: /Malformed subscribe pattern "inserts": the operation must be/ })
  await assert.rejects(sql.subscribe('update:users=', () => {}), /no primary key value after '='/)
  await assert.rejects(sql.subscribe(7 as never, () => {}), /takes a pattern string/)
  await assert.rejects(sql.subscribe('*', 'not a function' as never), { name: 'TypeError', message: /fn, called with each change, must be a function, not string/ })
  await assert.rejects(sql.subscribe('*', () => {}, 1 as never), /onsubscribe \(the third argument\) must be a function/)
  await assert.rejects(sql.subscribe('*', () => {}, undefined, {} as never), /onerror \(the fourth argument\) must be a function/)
  const badList = instance('a,,b')
  await assert.rejects(badList.subscribe('*', () => {}), /publications "a,,b": a publication name is empty/)
  await assert.rejects(sql.subscribe('*', () => {}), /publication "pgjs_sub_missing_\w+" does not exist/)
  // A failed start leaves nothing running: the next subscribe() tries again, and fails the same way.
  await assert.rejects(sql.subscribe('insert', () => {}), /does not exist/)
  await sql.end()
})
