// test-tags: matrix
// LISTEN / NOTIFY: payloads, any channel name, several handlers sharing one
// LISTEN, unlisten, throwing handlers, notifications from other sessions, and
// listening again after the connection was lost.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ArgumentError, Client, ConnectionError, type Notification } from '../../../src/index.js'
import { fileClient, openClient, uniqueName } from '../../support/client.js'
import { startProxy } from '../../support/proxies/proxy.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'

const db = await fileClient()

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** SQL string literal. */
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`

/** Resolves with the next `count` payloads a channel delivers; rejects after `ms`. */
function collect(c: Client, channel: string, count: number, ms = 3000): { listening: Promise<{ unlisten(): Promise<void> }>; got: Promise<[string, Notification][]> } {
  const got: [string, Notification][] = []
  let done!: (v: [string, Notification][]) => void
  let fail!: (e: Error) => void
  const p = new Promise<[string, Notification][]>((res, rej) => {
    done = res
    fail = rej
  })
  const timer = setTimeout(() => fail(new Error(`only ${got.length} of ${count} notifications on ${JSON.stringify(channel)} arrived`)), ms)
  const listening = c.listen(channel, (payload, n) => {
    got.push([payload, n])
    if (got.length === count) {
      clearTimeout(timer)
      done(got)
    }
  })
  listening.catch(() => clearTimeout(timer))
  return { listening, got: p }
}

async function listeningChannels(c: Client): Promise<string[]> {
  const { rows } = await c.query<{ ch: string }>('SELECT pg_listening_channels() AS ch ORDER BY 1')
  return rows.map((r) => r.ch)
}

describe('delivery', () => {
  test('a notification with a payload reaches the handler before the reply of a later query', async () => {
    const channel = uniqueName('chan')
    const seen: [string, Notification][] = []
    const l = await db.listen(channel, (payload, n) => seen.push([payload, n]))
    try {
      await db.notify(channel, 'order 42 shipped')
      await db.query('SELECT 1')
      assert.equal(seen.length, 1)
      assert.equal(seen[0]![0], 'order 42 shipped')
      assert.deepEqual(seen[0]![1], { processId: db.processId, channel, payload: 'order 42 shipped' })
    } finally {
      await l.unlisten()
    }
  })

  test('without a payload the handler gets an empty string', async () => {
    const channel = uniqueName('nopayload')
    const { listening, got } = collect(db, channel, 3)
    const l = await listening
    try {
      await db.notify(channel)
      await db.query(`NOTIFY ${channel}`)
      await db.query('SELECT pg_notify($1, NULL)', [channel])
      assert.deepEqual(
        (await got).map(([p]) => p),
        ['', '', ''],
      )
    } finally {
      await l.unlisten()
    }
  })

  test('payloads keep every character, up to the server limit', async () => {
    const channel = uniqueName('payloads')
    const payloads = ["it's \"quoted\"", 'ünïcødé ✓ 🎉', 'line\nbreak\ttab', 'x'.repeat(7999)]
    const { listening, got } = collect(db, channel, payloads.length)
    const l = await listening
    try {
      for (const p of payloads) await db.notify(channel, p)
      assert.deepEqual(
        (await got).map(([p]) => p),
        payloads,
      )
    } finally {
      await l.unlisten()
    }
  })

  test('channel names with any characters are quoted, and match exactly', async () => {
    const names = ['with "quotes"', 'with spaces', 'ünïcødé ✓', 'select', 'MixedCase', "it's; DROP TABLE x; --", 'back\\slash', '$1', 'a'.repeat(63)]
    for (const channel of names) {
      const { listening, got } = collect(db, channel, 2)
      const l = await listening
      try {
        assert.ok((await listeningChannels(db)).includes(channel), `${JSON.stringify(channel)} is listened to under its own name`)
        await db.notify(channel, 'via notify()')
        // From another session, with NOTIFY and a quoted identifier.
        await adminQuery(`NOTIFY "${channel.replace(/"/g, '""')}", ${lit('via NOTIFY')}`)
        const r = await got
        assert.deepEqual(
          r.map(([p, n]) => [p, n.channel]),
          [
            ['via notify()', channel],
            ['via NOTIFY', channel],
          ],
        )
      } finally {
        await l.unlisten()
      }
    }
    // Case matters: a notification on "mixedcase" is not one on "MixedCase".
    const seen: string[] = []
    const l = await db.listen('MixedCase', (p) => seen.push(p))
    await db.notify('mixedcase', 'other')
    await db.notify('MixedCase', 'mine')
    await db.query('SELECT 1')
    await l.unlisten()
    assert.deepEqual(seen, ['mine'])
  })

  test('invalid channel names are ArgumentErrors', async () => {
    const h = () => undefined
    await assert.rejects(db.listen('', h), ArgumentError)
    await assert.rejects(db.listen('nul\0char', h), ArgumentError)
    await assert.rejects(db.listen(42 as unknown as string, h), ArgumentError)
    await assert.rejects(db.listen('ok', 'not a function' as unknown as () => void), ArgumentError)
    // The server truncates identifiers to 63 bytes: a longer name would listen
    // to another channel than the one asked for, and never get its notifications.
    await assert.rejects(db.listen('x'.repeat(64), h), ArgumentError)
    await assert.rejects(db.listen('é'.repeat(32), h), ArgumentError)
    assert.deepEqual(await listeningChannels(db), [])
  })

  test('notifications sent from another connection arrive, with the sender\'s process id', async () => {
    const channel = uniqueName('remote')
    const { listening, got } = collect(db, channel, 2)
    const l = await listening
    try {
      const sender = await openClient()
      try {
        await sender.notify(channel, 'one')
        await adminQuery(`SELECT pg_notify(${lit(channel)}, 'two')`)
        const r = await got
        assert.deepEqual(
          r.map(([p]) => p),
          ['one', 'two'],
        )
        assert.equal(r[0]![1].processId, sender.processId)
        assert.notEqual(r[1]![1].processId, db.processId)
      } finally {
        await sender.end()
      }
    } finally {
      await l.unlisten()
    }
  })

  test('the client also emits every notification as a \'notification\' event', async () => {
    const channel = uniqueName('event')
    const events: Notification[] = []
    const onN = (n: Notification) => events.push(n)
    db.on('notification', onN)
    const l = await db.listen(channel, () => undefined)
    try {
      await db.notify(channel, 'evt')
      await db.query('SELECT 1')
      assert.deepEqual(
        events.filter((n) => n.channel === channel).map((n) => n.payload),
        ['evt'],
      )
    } finally {
      db.off('notification', onN)
      await l.unlisten()
    }
  })

  test('a notification sent inside a transaction arrives at commit, not before, and never if rolled back', async () => {
    const channel = uniqueName('txnotify')
    const seen: string[] = []
    const l = await db.listen(channel, (p) => seen.push(p))
    const other = await openClient()
    try {
      await other.begin(async (tx) => {
        await tx.query('SELECT pg_notify($1, $2)', [channel, 'committed'])
        await db.query('SELECT 1')
        assert.deepEqual(seen, [])
      })
      await other
        .begin(async (tx) => {
          await tx.query('SELECT pg_notify($1, $2)', [channel, 'rolled back'])
          throw new Error('no')
        })
        .catch(() => undefined)
      await sleep(20)
      await db.query('SELECT 1')
      assert.deepEqual(seen, ['committed'])
    } finally {
      await other.end()
      await l.unlisten()
    }
  })
})

describe('handlers', () => {
  test('several handlers on one channel share one LISTEN; UNLISTEN goes out only after the last one', async () => {
    const { connectionString } = await mainDatabase()
    const url = new URL(connectionString!)
    const sent: string[] = []
    const proxy = await startProxy({ host: url.hostname, port: Number(url.port) }, { onClientData: (chunk) => sent.push(chunk.toString('latin1')) })
    // Unnamed statements: every execution carries its text, so the tap sees each one.
    const c = new Client({ connectionString: connectionString!, host: proxy.host, port: proxy.port, sslmode: 'disable', prepare: false })
    try {
      const channel = uniqueName('shared')
      const count = (what: string) => sent.join('').split(`\0${what} "${channel}"\0`).length - 1
      const seen: string[] = []
      const [a, b, c3] = await Promise.all([
        c.listen(channel, (p) => seen.push(`a:${p}`)),
        c.listen(channel, (p) => seen.push(`b:${p}`)),
        c.listen(channel, (p) => seen.push(`c:${p}`)),
      ])
      assert.equal(count('LISTEN'), 1)
      await c.notify(channel, '1')
      await c.query('SELECT 1')
      assert.deepEqual(seen.sort(), ['a:1', 'b:1', 'c:1'])
      await a.unlisten()
      await a.unlisten() // twice is harmless
      await b.unlisten()
      assert.equal(count('UNLISTEN'), 0)
      assert.deepEqual(await listeningChannels(c), [channel])
      seen.length = 0
      await c.notify(channel, '2')
      await c.query('SELECT 1')
      assert.deepEqual(seen, ['c:2'], 'unlistened handlers get nothing')
      await c3.unlisten()
      assert.equal(count('UNLISTEN'), 1)
      assert.deepEqual(await listeningChannels(c), [])
      seen.length = 0
      await c.notify(channel, '3')
      await c.query('SELECT 1')
      assert.equal(seen.length, 0)
      // Listening again after the last unlisten issues a new LISTEN.
      const d = await c.listen(channel, (p) => seen.push(`d:${p}`))
      assert.equal(count('LISTEN'), 2)
      await c.notify(channel, '4')
      await c.query('SELECT 1')
      assert.deepEqual(seen, ['d:4'])
      await d.unlisten()
    } finally {
      await c.end()
      await proxy.close()
    }
  })

  test('the same function listened twice is two handlers: unlistening one handle leaves the other', async () => {
    const channel = uniqueName('samefn')
    const seen: string[] = []
    const fn = (p: string) => seen.push(p)
    const one = await db.listen(channel, fn)
    const two = await db.listen(channel, fn)
    try {
      await one.unlisten()
      await db.notify(channel, 'still there')
      await db.query('SELECT 1')
      assert.deepEqual(seen, ['still there'])
      assert.deepEqual(await listeningChannels(db), [channel])
    } finally {
      await two.unlisten()
    }
    assert.deepEqual(await listeningChannels(db), [])
  })

  test('a throwing handler does not break the connection, nor keep the other handlers from their notification', async () => {
    const channel = uniqueName('throwing')
    const thrown: unknown[] = []
    const onUncaught = (e: unknown) => thrown.push(e)
    const saved = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.on('uncaughtException', onUncaught)
    const seen: string[] = []
    const bad = await db.listen(channel, () => {
      throw new Error('handler bug')
    })
    const good = await db.listen(channel, (p) => seen.push(p))
    try {
      await db.notify(channel, 'first')
      await db.notify(channel, 'second')
      assert.deepEqual((await db.query('SELECT 7 AS n')).rows, [{ n: 7 }])
      await new Promise((r) => setImmediate(r))
      assert.deepEqual(seen, ['first', 'second'])
      assert.equal(thrown.length, 2)
      assert.match(String(thrown[0]), /handler bug/)
    } finally {
      process.off('uncaughtException', onUncaught)
      for (const l of saved) process.on('uncaughtException', l)
      await bad.unlisten()
      await good.unlisten()
    }
  })

  test('a handler may unlisten itself while notifications are being delivered', async () => {
    const channel = uniqueName('selfunlisten')
    const seen: string[] = []
    let unlistening: Promise<void> | undefined
    const self = await db.listen(channel, (p) => {
      seen.push(`self:${p}`)
      unlistening ??= self.unlisten()
    })
    const other = await db.listen(channel, (p) => seen.push(`other:${p}`))
    try {
      await db.notify(channel, '1')
      await db.notify(channel, '2')
      await db.query('SELECT 1')
      await unlistening
      assert.deepEqual(seen, ['self:1', 'other:1', 'other:2'])
    } finally {
      await other.unlisten()
    }
  })

  test('listen() fails on a closed client and when the connection cannot be opened', async () => {
    const c = await openClient()
    await c.end()
    await assert.rejects(c.listen('x', () => undefined), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
    const nowhere = new Client({ host: '127.0.0.1', port: 1, user: 'x', database: 'x', sslmode: 'disable' })
    await assert.rejects(nowhere.listen('x', () => undefined), ConnectionError)
    nowhere.destroy()
  })

  test('a LISTEN issued while a transaction holds the client is sent after it', async () => {
    const c = await openClient()
    try {
      const channel = uniqueName('behind_tx')
      const seen: string[] = []
      let listening: Promise<unknown> | undefined
      await c.begin(async (tx) => {
        listening = c.listen(channel, (p) => seen.push(p))
        await tx.query('SELECT pg_sleep(0.05)')
        assert.deepEqual(await tx.query('SELECT pg_listening_channels() AS ch').then((r) => r.rows), [])
      })
      await listening
      assert.deepEqual(await listeningChannels(c), [channel])
      await adminQuery(`SELECT pg_notify(${lit(channel)}, 'after tx')`)
      for (let i = 0; i < 100 && seen.length < 1; i++) await sleep(10)
      assert.deepEqual(seen, ['after tx'])
    } finally {
      await c.end()
    }
  })
})

describe('after a lost connection', () => {
  test('the next query reconnects and listens to every channel again; notifications arrive again', async () => {
    const c = await openClient()
    try {
      const ch1 = uniqueName('relisten a "quoted"')
      const ch2 = uniqueName('relisten ü')
      const dropped = uniqueName('relisten dropped')
      const seen: string[] = []
      await c.listen(ch1, (p) => seen.push(`1:${p}`))
      await c.listen(ch2, (p) => seen.push(`2:${p}`))
      const d = await c.listen(dropped, (p) => seen.push(`d:${p}`))
      await d.unlisten()
      const pid = c.processId
      const lost = new Promise<Error>((r) => c.once('disconnect', r))
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      assert.ok((await lost) instanceof ConnectionError)
      const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      assert.notEqual(rows[0]!.pid, pid)
      assert.deepEqual((await listeningChannels(c)).sort(), [ch1, ch2].sort())
      await adminQuery(`SELECT pg_notify(${lit(ch1)}, 'back'), pg_notify(${lit(ch2)}, 'back'), pg_notify(${lit(dropped)}, 'back')`)
      for (let i = 0; i < 100 && seen.length < 2; i++) await sleep(10)
      await c.query('SELECT 1')
      assert.deepEqual(seen.sort(), ['1:back', '2:back'])
      // And a second loss works the same way. Waited for, as the first: a query written before the
      // client has seen the loss goes down with the connection ("may have run"), which is right.
      const lostAgain = new Promise<Error>((r) => c.once('disconnect', r))
      await adminQuery(`SELECT pg_terminate_backend(${c.processId})`)
      assert.ok((await lostAgain) instanceof ConnectionError)
      await c.query('SELECT 1')
      assert.deepEqual((await listeningChannels(c)).sort(), [ch1, ch2].sort())
    } finally {
      await c.end()
    }
  })

  test('a client that only listens reconnects by itself and receives notifications again, without any query', async () => {
    const c = await openClient({ reconnectMaxDelay: 50 })
    try {
      const channel = uniqueName('listen only')
      const seen: string[] = []
      await c.listen(channel, (p) => seen.push(p))
      const pid = c.processId
      const lost = new Promise<Error>((r) => c.once('disconnect', r))
      await adminQuery(`SELECT pg_terminate_backend(${pid})`)
      await lost
      // No query from the client: the new connection and its LISTEN come on their own.
      for (let i = 0; i < 300 && !(c.connected && c.processId !== pid); i++) await sleep(10)
      assert.ok(c.connected, 'the client reconnected')
      assert.notEqual(c.processId, pid)
      for (let i = 0; i < 300 && seen.length === 0; i++) {
        await adminQuery(`SELECT pg_notify(${lit(channel)}, 'again')`)
        await sleep(20)
      }
      assert.equal(seen[0], 'again')
    } finally {
      await c.end()
    }
  })
})
