// test-tags: matrix, slow
// Logical change streams (pgoutput) against a real server: every message
// type, values decoded as queries decode them, unchanged TOAST values,
// replica identities, schema changes, streamed large transactions, and the
// acknowledgement rule (a transaction is confirmed only once the consumer
// asked for the message after its commit).

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ArgumentError } from '../../../src/index.js'
import { Lsn, subscribe, unchangedToast, type ChangeMessage, type CommitMessage, type SubscribeOptions } from '../../../src/replication.js'
import { fileClient, openClient } from '../../support/client.js'
import { dropSlot, fixture, nextTransaction, Reader, sleep, startSubscription, types } from '../../support/replication-db.js'
import { getTestServer } from '../../support/servers/test-server.js'

const db = await fileClient()
const major = (await getTestServer()).version

// Values in binary from PostgreSQL 14 on (13 refuses the option: see below).
const formats = major >= 14 ? [false, true] : [false]

const changes = (ms: ChangeMessage[]) => ms.filter((m) => m.type !== 'begin' && m.type !== 'commit')

describe('pgoutput messages', () => {
  test('begin, insert, update, delete, truncate, message and commit, in order, with LSNs', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY, note text')
    // pgoutput sends logical decoding messages from PostgreSQL 14 on (13 refuses the option: see below).
    const messages = major >= 14
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], messages })
    try {
      await db.query(`INSERT INTO ${f.table} VALUES (1, 'a'), (2, 'b')`)
      await db.query(`UPDATE ${f.table} SET note = 'z' WHERE id = 1`)
      await db.query(`UPDATE ${f.table} SET id = 3 WHERE id = 2`)
      await db.query(`DELETE FROM ${f.table} WHERE id = 3`)
      if (messages) {
        await db.query(`SELECT pg_logical_emit_message(true, 'app', 'in a transaction')`)
        await db.query(`SELECT pg_logical_emit_message(false, 'app', 'not transactional')`)
      }
      await db.query(`TRUNCATE ${f.table} RESTART IDENTITY CASCADE`)

      const ins = await nextTransaction(reader)
      assert.deepEqual(types(ins), ['begin', 'insert', 'insert', 'commit'])
      const begin = ins[0]!
      const commit = ins[3] as CommitMessage
      assert.ok(begin.type === 'begin' && begin.xid > 0 && begin.xid === commit.xid)
      assert.ok(begin.commitLsn.equals(commit.commitLsn))
      assert.ok(commit.endLsn > commit.commitLsn)
      assert.ok(commit.commitTime instanceof Date && Math.abs(commit.commitTime.getTime() - Date.now()) < 60_000)
      assert.ok(ins[1]!.lsn instanceof Lsn)
      assert.match(String(commit.endLsn), /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/)
      const rows = changes(ins).map((m) => (m.type === 'insert' ? [m.schema, m.table, m.row] : null))
      assert.deepEqual(rows, [
        ['public', f.table, { id: 1, note: 'a' }],
        ['public', f.table, { id: 2, note: 'b' }],
      ])

      const [u1] = changes(await nextTransaction(reader))
      assert.ok(u1?.type === 'update')
      assert.deepEqual(u1.row, { id: 1, note: 'z' })
      assert.equal(u1.old, undefined)
      assert.equal(u1.key, undefined, 'the key did not change: no old key')

      const [u2] = changes(await nextTransaction(reader))
      assert.ok(u2?.type === 'update')
      assert.deepEqual(u2.row, { id: 3, note: 'b' })
      assert.deepEqual(u2.key, { id: 2 }, 'the key changed: the old key comes with it')

      const [d] = changes(await nextTransaction(reader))
      assert.ok(d?.type === 'delete')
      assert.deepEqual(d.key, { id: 3 })
      assert.equal(d.old, undefined)

      if (messages) {
        const [msg] = changes(await nextTransaction(reader))
        assert.ok(msg?.type === 'message')
        assert.equal(msg.transactional, true)
        assert.equal(msg.prefix, 'app')
        assert.equal(Buffer.from(msg.content).toString(), 'in a transaction')

        const loose = await reader.next()
        assert.ok(loose.type === 'message' && !loose.transactional, `a non-transactional message comes alone, got ${loose.type}`)
        assert.equal(Buffer.from(loose.content).toString(), 'not transactional')
      }

      const [t] = changes(await nextTransaction(reader))
      assert.ok(t?.type === 'truncate')
      assert.deepEqual(t.tables, [{ schema: 'public', table: f.table }])
      assert.equal(t.cascade, true)
      assert.equal(t.restartIdentity, true)
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('built-in types decode to the values a query returns, in text and in binary', async () => {
    const columns = [
      ['b', 'bool', 'true'],
      ['i2', 'int2', '-7'],
      ['i4', 'int4', '2147483647'],
      ['i8', 'int8', '9007199254740993'],
      ['f4', 'float4', '1.5'],
      ['f8', 'float8', '-2.25e100'],
      ['num', 'numeric', '12345678901234567890.123'],
      ['t', 'text', `'Zoë ☃'`],
      ['vc', 'varchar(10)', `'short'`],
      ['bp', 'char(3)', `'ab'`],
      ['by', 'bytea', `'\\x00ff10'`],
      ['u', 'uuid', `'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'`],
      ['d', 'date', `'2024-02-29'`],
      ['ts', 'timestamp', `'2024-02-29 12:34:56.789'`],
      ['tz', 'timestamptz', `'2024-02-29 12:34:56.789+02'`],
      ['tm', 'time', `'12:34:56'`],
      ['iv', 'interval', `'1 year 2 days 03:04:05'`],
      ['j', 'json', `'{"a": [1, 2]}'`],
      ['jb', 'jsonb', `'{"b": null}'`],
      ['arr', 'int4[]', `'{1,NULL,3}'`],
      ['tarr', 'text[]', `'{"a b",c}'`],
      ['inet_', 'inet', `'192.168.0.1/24'`],
      ['lsn', 'pg_lsn', `'16/B374D848'`],
      ['rng', 'int4range', `'[1,5)'`],
      ['n', 'int4', 'NULL'],
    ]
    const f = await fixture(db, `id int PRIMARY KEY, ${columns.map(([n, t]) => `${n} ${t}`).join(', ')}`)
    const select = `SELECT ${columns.map(([n]) => n).join(', ')} FROM ${f.table} WHERE id = 1`
    try {
      await db.query(`INSERT INTO ${f.table} VALUES (0, ${columns.map(([, , v]) => v).join(', ')})`)
      await db.query(`UPDATE ${f.table} SET id = 1`)
      const expected = (await db.query(select)).rows[0]
      for (const binary of formats) {
        const slot = `${f.slot}_${binary ? 'b' : 't'}`
        const { sub, reader } = await startSubscription(db, { slot, publications: [f.publication], binary })
        try {
          await db.query(`UPDATE ${f.table} SET id = id + 1`)
          await db.query(`UPDATE ${f.table} SET id = id - 1`)
          await nextTransaction(reader)
          const [u] = changes(await nextTransaction(reader))
          assert.ok(u?.type === 'update')
          const { id: _id, ...row } = u.row
          assert.deepEqual(row, expected, `binary: ${binary}`)
        } finally {
          await sub.close()
          await dropSlot(db, slot)
        }
      }
    } finally {
      await f.drop()
    }
  })

  test("the application's own types (enum, domain, composite, arrays of them) decode as a query's", async () => {
    const tag = `${Math.random().toString(36).slice(2, 8)}`
    await db.simpleQuery(`CREATE TYPE mood_${tag} AS ENUM ('sad', 'happy'); CREATE DOMAIN posint_${tag} AS int4 CHECK (VALUE > 0); CREATE TYPE pair_${tag} AS (a int4, b text)`)
    const f = await fixture(db, `id int PRIMARY KEY, m mood_${tag}, ms mood_${tag}[], p posint_${tag}, c pair_${tag}`)
    try {
      for (const binary of formats) {
        const slot = `${f.slot}_${binary ? 'b' : 't'}`
        // A fresh client: nothing about these types is known before the stream starts.
        const client = await openClient()
        let started: Awaited<ReturnType<typeof startSubscription>>
        try {
          started = await startSubscription(client, { slot, publications: [f.publication], binary })
        } catch (err) {
          await client.end()
          throw err
        }
        const { sub, reader } = started
        try {
          await db.query(`DELETE FROM ${f.table}`)
          await db.query(`INSERT INTO ${f.table} VALUES (1, 'happy', '{sad,happy}', 7, ROW(1, 'x'))`)
          // The delete of the previous round's row may come first.
          let got: ChangeMessage[] = []
          while (!got.some((m) => m.type === 'insert')) got = changes(await nextTransaction(reader))
          const ins = got.find((m) => m.type === 'insert')
          assert.ok(ins?.type === 'insert', `binary: ${binary}`)
          const expected = (await db.query(`SELECT id, m, ms, p, c FROM ${f.table}`)).rows[0]
          assert.deepEqual(ins.row, expected, `binary: ${binary}`)
          assert.equal(ins.row.p, 7)
        } finally {
          await sub.close()
          await client.end()
          await dropSlot(db, slot)
        }
      }
    } finally {
      await f.drop()
      await db.simpleQuery(`DROP TYPE pair_${tag}; DROP DOMAIN posint_${tag}; DROP TYPE mood_${tag}`)
    }
  })

  test('an unchanged TOASTed value is the unchangedToast marker, never null or stale', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY, big text, small text')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication] })
    try {
      // Random text does not compress: it is stored out of line.
      await db.query(`INSERT INTO ${f.table} SELECT 1, string_agg(md5(i::text), ''), 'x' FROM generate_series(1, 2000) i`)
      await db.query(`UPDATE ${f.table} SET small = 'y'`)
      await db.query(`UPDATE ${f.table} SET big = NULL`)
      const [ins] = changes(await nextTransaction(reader))
      assert.ok(ins?.type === 'insert' && typeof ins.row.big === 'string' && ins.row.big.length === 64_000)
      const [u] = changes(await nextTransaction(reader))
      assert.ok(u?.type === 'update')
      assert.equal(u.row.big, unchangedToast)
      assert.equal(u.row.small, 'y')
      const [u2] = changes(await nextTransaction(reader))
      assert.ok(u2?.type === 'update')
      assert.equal(u2.row.big, null)
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('REPLICA IDENTITY FULL sends whole old rows; USING INDEX sends the index columns; NOTHING none', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY, code text NOT NULL, note text')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication] })
    try {
      await db.query(`INSERT INTO ${f.table} VALUES (1, 'one', 'n')`)
      await db.query(`ALTER TABLE ${f.table} REPLICA IDENTITY FULL`)
      await db.query(`UPDATE ${f.table} SET note = 'm'`)
      await db.query(`CREATE UNIQUE INDEX ${f.table}_code ON ${f.table} (code)`)
      await db.query(`ALTER TABLE ${f.table} REPLICA IDENTITY USING INDEX ${f.table}_code`)
      await db.query(`UPDATE ${f.table} SET code = 'uno'`)
      await db.query(`DELETE FROM ${f.table}`)

      await nextTransaction(reader)
      const [full] = changes(await nextTransaction(reader))
      assert.ok(full?.type === 'update')
      assert.equal(full.relation.replicaIdentity, 'f')
      assert.deepEqual(full.old, { id: 1, code: 'one', note: 'n' })
      assert.deepEqual(full.row, { id: 1, code: 'one', note: 'm' })

      const [byIndex] = changes(await nextTransaction(reader))
      assert.ok(byIndex?.type === 'update')
      assert.equal(byIndex.relation.replicaIdentity, 'i')
      assert.deepEqual(byIndex.key, { code: 'one' })
      assert.equal(byIndex.old, undefined)
      const [del] = changes(await nextTransaction(reader))
      assert.ok(del?.type === 'delete')
      assert.deepEqual(del.key, { code: 'uno' })
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('a schema change mid-stream: the rows that follow are decoded with the new columns and types', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY, v int')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], metadata: true })
    try {
      await db.query(`INSERT INTO ${f.table} VALUES (1, 10)`)
      await db.query(`ALTER TABLE ${f.table} ADD COLUMN extra text DEFAULT 'd', ALTER COLUMN v TYPE numeric`)
      await db.query(`INSERT INTO ${f.table} VALUES (2, 20.5, 'e')`)
      await db.query(`ALTER TABLE ${f.table} DROP COLUMN extra`)
      await db.query(`INSERT INTO ${f.table} VALUES (3, 30)`)
      const got = changes([...(await nextTransaction(reader)), ...(await nextTransaction(reader)), ...(await nextTransaction(reader))])
      const rows = got.filter((m) => m.type === 'insert').map((m) => (m.type === 'insert' ? m.row : null))
      assert.deepEqual(rows, [{ id: 1, v: 10 }, { id: 2, v: '20.5', extra: 'e' }, { id: 3, v: '30' }])
      assert.ok(got.filter((m) => m.type === 'relation').length >= 3, 'a relation message before each new shape')
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('a large transaction streamed in progress (logical_decoding_work_mem low) arrives as stream messages', async (t) => {
    if (major < 14) return t.skip('streaming needs PostgreSQL 14 (13 refuses the option: see below)')
    const f = await fixture(db, 'id int PRIMARY KEY, pad text')
    await db.query(`ALTER SYSTEM SET logical_decoding_work_mem = '64kB'`)
    await db.query('SELECT pg_reload_conf()')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], streaming: true })
    try {
      await db.query(`INSERT INTO ${f.table} SELECT i, repeat('x', 100) FROM generate_series(1, 5000) i`)
      const got = await reader.until((m) => m.type === 'streamCommit', 20_000)
      const kinds = new Set(types(got))
      assert.ok(kinds.has('streamStart') && kinds.has('streamStop') && kinds.has('streamCommit'), [...kinds].join(','))
      const inserted = got.filter((m) => m.type === 'insert')
      assert.equal(inserted.length, 5000)
      assert.ok(inserted.every((m) => m.type === 'insert' && typeof m.xid === 'number'), 'streamed changes carry their xid')
      assert.deepEqual(inserted.map((m) => (m.type === 'insert' ? m.row.id : 0)).slice(0, 3), [1, 2, 3])
    } finally {
      await sub.close()
      await db.query('ALTER SYSTEM RESET logical_decoding_work_mem')
      await db.query('SELECT pg_reload_conf()')
      await f.drop()
    }
  })

  test('two-phase transactions: begin prepare, prepare, commit prepared and rollback prepared', async (t) => {
    if (major < 15) return t.skip('two_phase needs PostgreSQL 15 (13 and 14 refuse the option: see below)')
    const f = await fixture(db, 'id int PRIMARY KEY')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], twoPhase: true })
    const gid = `${f.slot}_g`
    try {
      await db.simpleQuery(`BEGIN; INSERT INTO ${f.table} VALUES (1); PREPARE TRANSACTION '${gid}1'`)
      await db.query(`COMMIT PREPARED '${gid}1'`)
      await db.simpleQuery(`BEGIN; INSERT INTO ${f.table} VALUES (2); PREPARE TRANSACTION '${gid}2'`)
      await db.query(`ROLLBACK PREPARED '${gid}2'`)
      const got = await reader.until((m) => m.type === 'rollbackPrepared')
      assert.deepEqual(types(got), ['beginPrepare', 'insert', 'prepare', 'commitPrepared', 'beginPrepare', 'insert', 'prepare', 'rollbackPrepared'])
      const [bp, , p, cp] = got
      assert.ok(bp?.type === 'beginPrepare' && p?.type === 'prepare' && cp?.type === 'commitPrepared')
      assert.equal(bp.gid, `${gid}1`)
      assert.equal(p.gid, `${gid}1`)
      assert.equal(cp.gid, `${gid}1`)
      assert.equal(bp.xid, cp.xid)
    } finally {
      await sub.close()
      await db.query(`ROLLBACK PREPARED '${gid}2'`).catch(() => undefined)
      await f.drop()
    }
  })
})

describe('acknowledgement', () => {
  test('a transaction is confirmed only after the consumer asked for the message after its commit', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], statusInterval: 50 })
    const confirmed = async () => Lsn.from((await db.query<{ l: string }>(`SELECT confirmed_flush_lsn::text AS l FROM pg_replication_slots WHERE slot_name = $1`, [f.slot])).rows[0]!.l)
    try {
      await db.query(`INSERT INTO ${f.table} VALUES (1)`)
      await db.query(`INSERT INTO ${f.table} VALUES (2)`)
      const first = await nextTransaction(reader)
      const commit = first[first.length - 1] as CommitMessage
      await sleep(300)
      assert.ok((await confirmed()) < commit.endLsn, 'not confirmed while the consumer holds the commit')
      // Asking for the next message is the acknowledgement.
      const next = await reader.next()
      assert.equal(next.type, 'begin')
      await sleep(300)
      const c = await confirmed()
      assert.ok(c >= commit.endLsn, `confirmed ${c} after asking, commit ended at ${commit.endLsn}`)
      assert.equal(sub.acknowledgedLsn.equals(commit.endLsn) || sub.acknowledgedLsn > commit.endLsn, true)
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('a persistent slot resumes after the last handled transaction; a new subscription creates its slot', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    try {
      let { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], statusInterval: 50 })
      for (const id of [1, 2, 3]) await db.query(`INSERT INTO ${f.table} VALUES (${id})`)
      await nextTransaction(reader)
      await nextTransaction(reader) // asking for the second transaction's begin acknowledged the first
      await sleep(200)
      await sub.close()
      ;({ sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication] }))
      const again = changes(await nextTransaction(reader))
      assert.deepEqual(again.map((m) => (m.type === 'insert' ? m.row.id : null)), [2], 'the unacknowledged transaction comes again, the acknowledged one does not')
      await sub.close()
    } finally {
      await f.drop()
    }
  })
})

describe('what each PostgreSQL version offers', () => {
  // Every option with the first major that has it: below that it is refused
  // before anything is sent (no slot is created), with the version it needs;
  // from it on the stream starts.
  const options: { what: string; since: number; options: Partial<SubscribeOptions> }[] = [
    { what: 'binary: true', since: 14, options: { binary: true } },
    { what: 'messages: true', since: 14, options: { messages: true } },
    { what: 'streaming: true', since: 14, options: { streaming: true } },
    { what: 'twoPhase: true', since: 15, options: { twoPhase: true } },
    { what: "origin: 'none'", since: 16, options: { origin: 'none' } },
    { what: 'protocolVersion: 1', since: 10, options: { protocolVersion: 1 } },
    { what: 'protocolVersion: 2', since: 14, options: { protocolVersion: 2 } },
    { what: 'protocolVersion: 3', since: 15, options: { protocolVersion: 3 } },
    { what: 'protocolVersion: 4', since: 16, options: { protocolVersion: 4 } },
  ]
  for (const o of options) {
    test(`${o.what}: ${o.since > major ? `refused before anything is sent (needs ${o.since})` : 'streams'}`, async () => {
      const f = await fixture(db, 'id int PRIMARY KEY')
      const sub = subscribe(db, { slot: f.slot, publications: [f.publication], ...o.options })
      try {
        if (o.since > major) {
          const err = await sub.ready().then(
            () => assert.fail('the subscription started'),
            (e: unknown) => e as Error,
          )
          assert.ok(err instanceof ArgumentError, String(err))
          assert.match(err.message, new RegExp(`^${o.what.replace(/[()]/g, '\\$&')} needs PostgreSQL ${o.since} or later; this server is ${major}\\.\\d+$`))
          const slots = await db.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [f.slot])
          assert.equal(slots.rows.length, 0, 'no slot was created')
          await assert.rejects(sub.next(), (e) => e === err, 'the iteration ends with the same error')
        } else {
          await Promise.race([sub.ready(), sleep(10_000).then(() => assert.fail('the subscription did not start within 10 s'))])
          await db.query(`INSERT INTO ${f.table} VALUES (1)`)
          const reader = new Reader(sub)
          const got = changes(await nextTransaction(reader))
          assert.deepEqual(got.map((m) => (m.type === 'insert' ? m.row : m.type)), [{ id: 1 }])
        }
      } finally {
        await sub.close()
        await f.drop()
      }
    })
  }

  test("origin: 'none' leaves out changes applied on behalf of another origin (PostgreSQL 16+)", async (t) => {
    if (major < 16) return t.skip('origin needs PostgreSQL 16 (older servers refuse it: see above)')
    const f = await fixture(db, 'id int PRIMARY KEY')
    const origin = `${f.slot}_o`
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], origin: 'none' })
    // A session of its own: a replication origin set up in a session stays with it.
    const applier = await openClient()
    try {
      await applier.query('SELECT pg_replication_origin_create($1)', [origin])
      await applier.query('SELECT pg_replication_origin_session_setup($1)', [origin])
      await applier.query(`INSERT INTO ${f.table} VALUES (1)`)
      await applier.query('SELECT pg_replication_origin_session_reset()')
      await applier.query(`INSERT INTO ${f.table} VALUES (2)`)
      // Up to the transaction of the second row: the first one's, if it came at all, had to come before.
      const rows: unknown[] = []
      while (!rows.some((r) => (r as { id: number }).id === 2)) rows.push(...changes(await nextTransaction(reader)).map((m) => (m.type === 'insert' ? m.row : m.type)))
      assert.deepEqual(rows, [{ id: 2 }], 'the change of the other origin is left out')
    } finally {
      await sub.close()
      await applier.query('SELECT pg_replication_origin_drop($1)', [origin]).catch(() => undefined)
      await applier.end()
      await f.drop()
    }
  })
})
