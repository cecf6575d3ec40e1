// test-tags: slow
// Replication connections and their commands (IDENTIFY_SYSTEM, slots,
// TIMELINE_HISTORY), streams over TCP, unix sockets and TLS, physical WAL
// streaming, a raw logical stream from test_decoding, and every failure a
// subscription can meet, each named.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, test } from 'node:test'
import { startServer } from '../../support/servers/postgres.js'
import {
  ArgumentError,
  Client,
  connect,
  createPool,
  Lsn,
  PgError,
} from '../../../src/index.js'
import { connectReplication, replicate, ReplicationError, subscribe } from '../../../src/replication.js'
import { fileClient, uniqueName } from '../../support/client.js'
import { dropSlot, fixture, nextTransaction, Reader, sleep, startSubscription, types } from '../../support/replication-db.js'
import { connectionUrl, getTestServer, mainDatabase } from '../../support/servers/test-server.js'

const db = await fileClient()
const server = await getTestServer()
const url = (await mainDatabase()).connectionString ?? connectionUrl(server, server.superuser)


async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p
  } catch (err) {
    return err as Error
  }
  assert.fail('expected a rejection')
}

describe('replication connections', () => {
  test('the replication setting in URLs, key=value strings and options; commands through the simple protocol only', async () => {
    const rc = await connect(`${url}${url.includes('?') ? '&' : '?'}replication=database`)
    try {
      const [r] = await rc.simpleQuery('IDENTIFY_SYSTEM')
      assert.equal(r!.rows.length, 1)
      const err = await rejection(rc.query('SELECT 1'))
      assert.ok(err instanceof ArgumentError && /simple protocol/.test(err.message), err.message)
      // SQL works on a logical replication connection, through the simple protocol.
      const [one] = await rc.simpleQuery('SELECT 1 AS one')
      assert.deepEqual(one!.rows, [{ one: 1 }])
    } finally {
      await rc.end()
    }
    const physical = await connect({ connectionString: url, replication: true })
    try {
      const [r] = await physical.simpleQuery('IDENTIFY_SYSTEM')
      assert.equal(r!.rows[0]!.dbname, null)
    } finally {
      await physical.end()
    }
    const kv = await connect(`host=${server.socketDir} port=${server.port} user=${server.superuser.user} dbname=${server.database} replication=database`)
    try {
      assert.equal((await kv.simpleQuery('IDENTIFY_SYSTEM'))[0]!.rows[0]!.dbname, server.database)
    } finally {
      await kv.end()
    }
  })

  test('IDENTIFY_SYSTEM, CREATE/READ/DROP_REPLICATION_SLOT, TIMELINE_HISTORY', async () => {
    const rc = await connectReplication({ host: server.socketDir, port: server.port, user: server.superuser.user, database: server.database })
    const physical = await connectReplication({ host: server.socketDir, port: server.port, user: server.superuser.user }, 'physical')
    const logical = uniqueName('cmd_l').toLowerCase()
    const phys = uniqueName('cmd_p').toLowerCase()
    try {
      const id = await rc.identifySystem()
      assert.match(id.systemId, /^\d+$/)
      assert.equal(id.timeline, 1)
      assert.ok(id.xlogPos instanceof Lsn && id.xlogPos > Lsn.ZERO)
      assert.equal(id.dbName, server.database)

      const created = await rc.createSlot(logical, { plugin: 'pgoutput', temporary: true })
      assert.equal(created.slotName, logical)
      assert.equal(created.outputPlugin, 'pgoutput')
      assert.ok(created.consistentPoint > Lsn.ZERO)

      // Each server's own form of the command: bare keywords before PostgreSQL 15, an option list from it on.
      const exported = await rc.createSlot(`${logical}_x`, { plugin: 'pgoutput', temporary: true, snapshot: 'export' })
      assert.match(String(exported.snapshotName), /^[0-9A-F]+-[0-9A-F]+-\d+$/)
      assert.equal(created.snapshotName, null, 'no snapshot is exported unless asked')

      const p = await physical.createSlot(phys)
      assert.equal(p.slotName, phys)
      const reserved = await db.query<{ l: string | null }>('SELECT restart_lsn::text AS l FROM pg_replication_slots WHERE slot_name = $1', [phys])
      assert.notEqual(reserved.rows[0]!.l, null, 'WAL is reserved from the start')
      if (server.version >= 15) {
        const read = await physical.readSlot(phys)
        assert.equal(read.slotType, 'physical')
        assert.ok(read.restartLsn !== null && read.restartLsn > Lsn.ZERO)
        assert.equal(read.restartTimeline, 1)
        assert.deepEqual(await physical.readSlot('no_such_slot'), { slotType: null, restartLsn: null, restartTimeline: null })
        const twoPhase = await rc.createSlot(`${logical}_2`, { plugin: 'pgoutput', temporary: true, twoPhase: true })
        assert.equal(twoPhase.slotName, `${logical}_2`)
      } else {
        // Refused before anything is sent: the connection goes on.
        const read = await rejection(physical.readSlot(phys))
        assert.ok(read instanceof ArgumentError, String(read))
        assert.match(read.message, new RegExp(`^readSlot\\(\\) needs PostgreSQL 15 or later; this server is ${server.version}\\.\\d+$`))
        const twoPhase = await rejection(rc.createSlot(`${logical}_2`, { plugin: 'pgoutput', temporary: true, twoPhase: true }))
        assert.ok(twoPhase instanceof ArgumentError, String(twoPhase))
        assert.match(twoPhase.message, new RegExp(`^twoPhase: true needs PostgreSQL 15 or later; this server is ${server.version}\\.\\d+$`))
        assert.equal((await db.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [`${logical}_2`])).rows.length, 0)
        assert.equal((await rc.identifySystem()).dbName, server.database)
      }
      // Timeline 1 has no history file.
      const err = await rejection(physical.timelineHistory(1))
      assert.ok(err instanceof PgError, String(err))
      await physical.dropSlot(phys)
      const gone = await db.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [phys])
      assert.equal(gone.rows.length, 0)
      const bad = await rejection(rc.dropSlot('Bad-Name'))
      assert.ok(bad instanceof ArgumentError && /replication slot name/.test(bad.message), String(bad))
    } finally {
      await rc.end()
      await physical.end()
      await dropSlot(db, phys)
    }
  })

  for (const via of ['tcp', 'unix socket', 'tls'] as const) {
    test(`a subscription over ${via}`, async () => {
      const f = await fixture(db, 'id int PRIMARY KEY')
      const settings =
        via === 'tcp'
          ? connectionUrl(server, server.superuser)
          : via === 'unix socket'
            ? connectionUrl(server, server.superuser, { host: server.socketDir })
            : connectionUrl(server, server.superuser, { host: server.hostname, params: { sslmode: 'verify-full', sslrootcert: server.tls.caFile } })
      const client = new Client(settings)
      try {
        const { sub, reader } = await startSubscription(client, { slot: f.slot, publications: [f.publication] })
        try {
          await db.query(`INSERT INTO ${f.table} VALUES (7)`)
          assert.deepEqual(types(await nextTransaction(reader)), ['begin', 'insert', 'commit'])
        } finally {
          await sub.close()
        }
      } finally {
        await client.end()
        await f.drop()
      }
    })
  }

  test('ordinary clients and pools on the same settings are unaffected by a running subscription', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    const pool = createPool({ connectionString: url, max: 2 })
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication] })
    const poolSub = subscribe(pool, { slot: `${f.slot}_pool`, publications: [f.publication] })
    const poolReader = new Reader(poolSub)
    try {
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => db.query('SELECT $1::int AS i', [i])))
      assert.equal(results[49]!.rows[0]!.i, 49)
      assert.equal((await pool.query('SELECT 2 AS two')).rows[0]!.two, 2)
      // The pool's stream has made its slot and started: the insert below is in what it reads.
      await poolSub.ready()
      await db.query(`INSERT INTO ${f.table} VALUES (1)`)
      assert.deepEqual(types(await nextTransaction(reader)), ['begin', 'insert', 'commit'])
      assert.deepEqual(types(await nextTransaction(poolReader)), ['begin', 'insert', 'commit'])
    } finally {
      await sub.close()
      await poolSub.close()
      await pool.end()
      await dropSlot(db, `${f.slot}_pool`)
      await f.drop()
    }
  })
})

describe('raw streams', () => {
  test('physical WAL streaming: XLogData with positions, acknowledged to the slot once handled', async () => {
    const slot = uniqueName('phys').toLowerCase()
    const rc = await connectReplication(url, 'physical')
    await rc.createSlot(slot)
    await rc.end()
    const stream = replicate(db, { physical: true, slot, statusInterval: 50 })
    try {
      // Before PostgreSQL 15 the stream starts at the current WAL position, not the slot's (which only READ_REPLICATION_SLOT
      // tells a physical connection): the WAL below is written once it streams.
      await Promise.race([stream.ready(), sleep(10_000).then(() => assert.fail('the stream did not start within 10 s'))])
      const reader = new Reader(stream)
      await db.query(`SELECT pg_logical_emit_message(false, 'wal', repeat('w', 20000))`)
      await db.query('SELECT pg_switch_wal()')
      const first = await reader.next()
      assert.ok(first.walStart instanceof Lsn && first.walEnd >= first.walStart)
      assert.ok(first.data.length > 0 && first.serverTime instanceof Date)
      const second = await reader.next()
      assert.ok(second.walStart.equals(first.walStart.plus(first.data.length)), 'contiguous WAL')
      // The acknowledgement goes out with the next status message (every 50 ms): polled for, up to 10 s.
      const handled = first.walStart.plus(first.data.length)
      let at = ''
      for (const deadline = performance.now() + 10_000; ; await sleep(20)) {
        const { rows } = await db.query<{ l: string }>('SELECT restart_lsn::text AS l FROM pg_replication_slots WHERE slot_name = $1', [slot])
        at = rows[0]!.l
        if (Lsn.from(at) >= handled || performance.now() > deadline) break
      }
      assert.ok(Lsn.from(at) >= handled, `slot at ${at}`)
    } finally {
      await stream.close()
      await dropSlot(db, slot)
    }
  })

  test('a logical slot with another output plugin (test_decoding): its raw messages', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    const stream = replicate(db, { slot: f.slot, plugin: 'test_decoding', pluginOptions: { 'include-xids': '0', 'skip-empty-xacts': '1' } })
    const connected = new Promise<void>((r) => stream.on('connect', () => r()))
    const reader = new Reader(stream)
    try {
      await connected
      await db.query(`INSERT INTO ${f.table} VALUES (42)`)
      const got = await reader.until((m) => Buffer.from(m.data).toString().startsWith('COMMIT'))
      const text = got.map((m) => Buffer.from(m.data).toString())
      assert.deepEqual(text, ['BEGIN', `table public.${f.table}: INSERT: id[integer]:42`, 'COMMIT'])
    } finally {
      await stream.close()
      await f.drop()
    }
  })
})

describe('failures, each named', () => {
  test('a slot in use by another connection', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    const { sub } = await startSubscription(db, { slot: f.slot, publications: [f.publication] })
    try {
      const second = subscribe(db, { slot: f.slot, publications: [f.publication] })
      const err = await rejection(second.next())
      assert.ok(err instanceof ReplicationError && err.reason === 'slot-in-use', String(err))
      assert.match(err.message, new RegExp(f.slot))
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('a missing publication', async () => {
    const sub = subscribe(db, { slot: uniqueName('nopub').toLowerCase(), publications: ['no_such_publication'] })
    const err = await rejection(sub.next())
    assert.ok(err instanceof ReplicationError && err.reason === 'publication-missing', String(err))
    assert.match(err.message, /"no_such_publication"/)
  })

  test('a slot dropped while the subscription runs', { timeout: 60_000 }, async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], reconnectMaxDelay: 200 })
    try {
      // The subscription reconnects at once, and its new walsender can take the
      // slot again between the termination and the drop (55006 "is active for
      // PID"): then both are tried again, for a bounded time.
      const deadline = performance.now() + 20_000
      for (let dropped = false; !dropped; ) {
        try {
          await db.simpleQuery(
            // pg_terminate_backend waits for the walsender to exit from PostgreSQL 14 on; before, the drop may meet it still there.
            `SELECT pg_terminate_backend(active_pid${server.version >= 14 ? ', 5000' : ''}) FROM pg_replication_slots WHERE slot_name = '${f.slot}' AND active_pid IS NOT NULL; SELECT pg_drop_replication_slot('${f.slot}')`,
          )
          dropped = true
        } catch (err) {
          if (!(err instanceof PgError && err.code === '55006') || performance.now() > deadline) throw err
          await sleep(10 + Math.random() * 40)
        }
      }
      const err = await rejection(reader.next())
      assert.ok(err instanceof ReplicationError && err.reason === 'slot-missing', String(err))
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('a missing slot for a raw logical stream', async () => {
    const err = await rejection(replicate(db, { slot: 'no_such_slot_here' }).next())
    assert.ok(err instanceof ReplicationError && err.reason === 'slot-missing', String(err))
  })

  test('a role without the REPLICATION attribute', async () => {
    const client = new Client(connectionUrl(server, server.users.trust))
    const err = await rejection(subscribe(client, { slot: 'never_created', publications: ['p'] }).next())
    assert.ok(err instanceof ReplicationError && err.reason === 'privilege', String(err))
    await client.end()
  })

  test('a server without wal_level=logical', async () => {
    const own = await startServer({ binDir: process.env.PIPEGRES_TEST_PGBIN || undefined, name: 'walreplica', settings: { wal_level: 'replica' } })
    try {
      const client = new Client(connectionUrl(own, own.superuser))
      await client.query('CREATE TABLE t (id int PRIMARY KEY)')
      await client.query('CREATE PUBLICATION p FOR TABLE t')
      const err = await rejection(subscribe(client, { slot: 's', publications: ['p'] }).next())
      assert.ok(err instanceof ReplicationError && err.reason === 'wal-level', String(err))
      assert.match(err.message, /wal_level/)
      await client.end()
    } finally {
      await own.stop()
    }
  })

  test('an AbortSignal stops a subscription: the iteration ends with the abort reason', async () => {
    const f = await fixture(db, 'id int PRIMARY KEY')
    const ac = new AbortController()
    const { sub, reader } = await startSubscription(db, { slot: f.slot, publications: [f.publication], signal: ac.signal })
    try {
      await db.query(`INSERT INTO ${f.table} VALUES (1)`)
      assert.equal((await reader.next()).type, 'begin')
      const reason = new Error('enough')
      ac.abort(reason)
      const err = await rejection(reader.next())
      assert.equal(err, reason)
    } finally {
      await sub.close()
      await f.drop()
    }
  })

  test('subscriptions and streams that fail to start leave nothing running: the process exits by itself', { timeout: 60_000 }, async () => {
    // In a process of its own, which must end once its client has: a socket
    // or timer left behind by a failed start would keep it alive (a test
    // process that then never exits is how such a leak once showed).
    const index = new URL('../../../src/index.js', import.meta.url).href
    const replication = new URL('../../../src/replication.js', import.meta.url).href
    const script = `
      import { Client } from ${JSON.stringify(index)}
      import { replicate, subscribe } from ${JSON.stringify(replication)}
      const db = new Client(process.env.PIPEGRES_CHILD_URL)
      const failures = []
      const fail = async (stream) => { try { await stream.ready(); failures.push('started') } catch (err) { failures.push(err.reason ?? err.code) } }
      await fail(subscribe(db, { slot: 'never_made', publications: ['no_such_publication'] }))
      await fail(replicate(db, { slot: 'no_such_slot_here' }))
      if (${server.version} < 16) await fail(subscribe(db, { slot: 'never_made', publications: ['p'], origin: 'none' }))
      const noReplication = new Client(process.env.PIPEGRES_CHILD_NOREPL_URL)
      await fail(subscribe(noReplication, { slot: 'never_made', publications: ['p'] }))
      const nowhere = new Client({ host: '127.0.0.1', port: 1, connectTimeout: 2000 })
      await fail(subscribe(nowhere, { slot: 'never_made', publications: ['p'] }))
      await Promise.all([db.end(), noReplication.end(), nowhere.end()])
      console.log(JSON.stringify(failures))
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, PIPEGRES_CHILD_URL: url, PIPEGRES_CHILD_NOREPL_URL: connectionUrl(server, server.users.trust) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    // Cleared once the child is gone: a pending timer would keep this file's process alive for its 30 s.
    let timer: NodeJS.Timeout | undefined
    const limit = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), 30_000)))
    const code = await Promise.race([exit, limit])
    clearTimeout(timer)
    if (code === 'still running') child.kill('SIGKILL')
    assert.equal(code, 0, `the child process: ${out}`)
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), [
      'publication-missing',
      'slot-missing',
      ...(server.version < 16 ? ['PG_INVALID_ARGUMENT'] : []),
      'privilege',
      'connection',
    ])
  })

  test('bad options are refused at once', () => {
    assert.throws(() => subscribe(db, { slot: 'Bad Name', publications: ['p'] }), ArgumentError)
    assert.throws(() => subscribe(db, { slot: 'ok', publications: [] }), ArgumentError)
    assert.throws(() => replicate(db, { physical: true, startLsn: 'nope' }), ArgumentError)
    // What the stream's settings come from: a client, a pool or settings, and nothing else.
    const notASource = /takes a Client, a Pool, a connection string or a settings object as db, got/
    assert.throws(() => subscribe(42 as never, { slot: 'ok', publications: ['p'] }), (err: Error) => err instanceof ArgumentError && notASource.test(err.message) && /got number/.test(err.message))
    assert.throws(() => replicate(new Map() as never, { physical: true }), (err: Error) => err instanceof ArgumentError && /got a Map: pass the client or pool/.test(err.message))
    assert.throws(() => subscribe({ connectionString: url, nonsense: 1 } as never, { slot: 'ok', publications: ['p'] }), /nonsense/)
    assert.equal(String(Lsn.from('16/b374d848')), '16/B374D848')
    assert.equal(Lsn.from(0x16b374d848n).toString(), '16/B374D848')
    assert.ok(Lsn.from('1/0') > Lsn.from('0/FFFFFFFF'))
    assert.equal(JSON.stringify({ at: Lsn.from('0/10') }), '{"at":"0/10"}')
  })
})
