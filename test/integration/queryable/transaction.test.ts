// test-tags: matrix, pglite
// Transactions with begin(): COMMIT on success, ROLLBACK on throw, options,
// pipelining inside, no outside query ever running inside the transaction,
// savepoints, failures the function swallowed, and queries on a transaction
// that is over. Timeouts and connection loss: transaction-loss.test.ts.

import assert from 'node:assert/strict'
import { describe, mock, test } from 'node:test'
import { ArgumentError, Client, ConnectionError, PgError, TransactionError, type Transaction } from '../../../src/index.js'
import { openClient, uniqueName } from '../../support/client.js'
import { txTable } from '../../support/tx-table.js'
import { startProxy } from '../../support/proxies/proxy.js'
import { adminQuery, mainDatabase } from '../../support/servers/test-server.js'
import { NOT_ON_PGLITE, serverOnly } from '../../support/target.js'

const { db, t, committed, insert } = await txTable('tx_rows')

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

describe('commit and rollback', () => {
  test('commit on success: begin() resolves with what the function returned; the data is visible after', serverOnly(NOT_ON_PGLITE.outsideView), async () => {
    const tag = uniqueName('commit')
    const result = await db.begin(async (tx) => {
      await insert(tx, tag)
      await insert(tx, tag)
      // Not visible outside before COMMIT.
      assert.equal(await committed(tag), 0)
      assert.equal(db.transactionStatus, 'T')
      return 'done'
    })
    assert.equal(result, 'done')
    assert.equal(await committed(tag), 2)
    assert.equal(db.transactionStatus, 'I')
  })

  test('rollback on throw: the same error is rethrown and nothing is committed', async () => {
    const tag = uniqueName('rollback')
    const boom = new Error('boom')
    const e = await db
      .begin(async (tx) => {
        await insert(tx, tag)
        throw boom
      })
      .catch((x: unknown) => x)
    assert.equal(e, boom)
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'I')
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
  })

  test('a function that throws synchronously is rolled back too', async () => {
    const tag = uniqueName('sync_throw')
    const e = await db
      .begin(((tx: Transaction) => {
        void insert(tx, tag).catch(() => undefined)
        throw new RangeError('sync')
      }) as unknown as (tx: Transaction) => Promise<void>)
      .catch((x: unknown) => x)
    assert.ok(e instanceof RangeError)
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'I')
  })

  test('a failing statement the function lets through: its PgError is rethrown, nothing committed', async () => {
    const tag = uniqueName('failing')
    const e = await db
      .begin(async (tx) => {
        await insert(tx, tag)
        await tx.query('SELECT 1/0')
      })
      .catch((x: unknown) => x)
    assert.ok(e instanceof PgError && e.code === '22012', String(e))
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'I')
  })

  test('a failure the function catches: COMMIT answers ROLLBACK, begin() rejects with TransactionError', async () => {
    const tag = uniqueName('swallowed')
    const e = await db
      .begin(async (tx) => {
        await insert(tx, tag)
        await tx.query('SELECT 1/0').catch(() => undefined)
        return 'looks fine'
      })
      .catch((x: unknown) => x)
    assert.ok(e instanceof TransactionError, String(e))
    assert.equal(e.code, 'PG_TRANSACTION_ROLLED_BACK')
    assert.equal(await committed(tag), 0)
    assert.equal(db.transactionStatus, 'I')
  })

  test('a COMMIT the server refuses (deferred constraint) rejects with its PgError; nothing committed', async () => {
    const u = uniqueName('deferred')
    await db.query(`CREATE TABLE ${u} (id int UNIQUE DEFERRABLE INITIALLY DEFERRED)`)
    try {
      const e = await db
        .begin(async (tx) => {
          await tx.query(`INSERT INTO ${u} VALUES (1), (1)`)
        })
        .catch((x: unknown) => x)
      assert.ok(e instanceof PgError && e.code === '23505', String(e))
      assert.deepEqual((await db.query(`SELECT count(*)::int AS n FROM ${u}`)).rows, [{ n: 0 }])
      assert.equal(db.transactionStatus, 'I')
    } finally {
      await db.query(`DROP TABLE ${u}`)
    }
  })
})

describe('options', () => {
  async function settings(options: object): Promise<Record<string, string>> {
    return db.begin(options, async (tx) => {
      const { rows } = await tx.query<Record<string, string>>(
        `SELECT current_setting('transaction_isolation') AS isolation, current_setting('transaction_read_only') AS read_only,
                current_setting('transaction_deferrable') AS deferrable`,
      )
      return rows[0]!
    })
  }

  test('isolation levels', async () => {
    for (const isolation of ['serializable', 'repeatable read', 'read committed', 'read uncommitted'] as const) {
      assert.equal((await settings({ isolation })).isolation, isolation)
    }
    const viaShow = await db.begin({ isolation: 'repeatable read' }, async (tx) => (await tx.query('SHOW transaction_isolation')).rows[0])
    assert.deepEqual(viaShow, { transaction_isolation: 'repeatable read' })
  })

  test('readOnly and deferrable', async () => {
    assert.deepEqual(await settings({ isolation: 'serializable', readOnly: true, deferrable: true }), {
      isolation: 'serializable',
      read_only: 'on',
      deferrable: 'on',
    })
    assert.equal((await settings({ readOnly: false })).read_only, 'off')
    assert.equal((await settings({ isolation: 'serializable', deferrable: false })).deferrable, 'off')
    // A write in a read-only transaction fails with 25006.
    const tag = uniqueName('ro')
    const e = await db.begin({ readOnly: true }, async (tx) => insert(tx, tag)).catch((x: unknown) => x)
    assert.ok(e instanceof PgError && e.code === '25006', String(e))
    assert.equal(await committed(tag), 0)
  })

  test('invalid options and arguments are ArgumentErrors, and nothing is sent', async () => {
    const before = db.processId
    let ran = false
    const fn = async () => {
      ran = true
    }
    const bad: unknown[] = [
      { isolation: 'snapshot' },
      { isolation: 'SERIALIZABLE' },
      { isolation: 'serializable; DROP TABLE x' },
      { readonly: true },
      { timeout: 5 },
      null,
      'serializable',
    ]
    for (const options of bad) {
      await assert.rejects(db.begin(options as object, fn), ArgumentError, JSON.stringify(options))
    }
    await assert.rejects(db.begin({} as never), ArgumentError)
    await assert.rejects(db.begin(undefined as never), ArgumentError)
    assert.equal(ran, false)
    // The client was never held: an outside query runs at once.
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    assert.equal(db.processId, before)
    assert.equal(db.transactionStatus, 'I')
  })
})

describe('pipelining and isolation from outside queries', () => {
  test('queries inside are pipelined: twenty queries over a 25 ms link cost a few round trips, in order', serverOnly(NOT_ON_PGLITE.socket), async () => {
    const { connectionString } = await mainDatabase()
    const url = new URL(connectionString!)
    // Turns: how often the client wrote after the server had spoken. Counted, not timed, so
    // that a loaded machine cannot fail it: a client that awaited each query would take 21.
    let counting = false
    let serverSpoke = true
    let turns = 0
    const proxy = await startProxy(
      { host: url.hostname, port: Number(url.port) },
      {
        delayMs: 25,
        onServerData: () => void (serverSpoke = true),
        onClientData: () => {
          if (counting && serverSpoke) turns++
          serverSpoke = false
        },
      },
    )
    const c = new Client({ connectionString: connectionString!, host: proxy.host, port: proxy.port, sslmode: 'disable' })
    try {
      await c.connect()
      const tag = uniqueName('pipelined')
      counting = true
      const seqs = await c.begin(async (tx) => {
        const ps = Array.from({ length: 20 }, (_, i) => tx.query<{ seq: number }>(`INSERT INTO ${t} (tag) VALUES ($1) RETURNING seq`, [`${tag}_${i}`]))
        return (await Promise.all(ps)).map((r) => r.rows[0]!.seq)
      })
      counting = false
      // BEGIN and the 20 queries in one turn, COMMIT in a second.
      assert.ok(turns <= 2, `${turns} turns`)
      for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, 'in the order issued')
      const r = await adminQuery(`SELECT count(*) FROM ${t} WHERE tag LIKE '${tag}_%'`)
      assert.equal(r.rows[0]![0], '20')
    } finally {
      await c.end()
      await proxy.close()
    }
  })

  test('a transaction racing with a thousand outside queries on the same client: none runs inside it', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
    const c = await openClient()
    try {
      const inTag = uniqueName('inside')
      const outTag = uniqueName('outside')
      let txXid = ''
      let outside: Promise<{ rows: { x: string | null; iso: string; mine: number }[] }>[] = []
      let outsideInserts: Promise<unknown>[] = []
      const tx = c.begin({ isolation: 'serializable' }, async (tx) => {
        const r = await tx.query<{ x: string }>(`INSERT INTO ${t} (tag) VALUES ($1) RETURNING pg_current_xact_id()::text AS x`, [inTag])
        txXid = r.rows[0]!.x
        // Issued on the client itself while the transaction runs.
        outside = Array.from({ length: 1000 }, () =>
          c.query<{ x: string | null; iso: string; mine: number }>(
            `SELECT pg_current_xact_id_if_assigned()::text AS x, current_setting('transaction_isolation') AS iso,
                    (SELECT count(*)::int FROM ${t} WHERE tag = $1) AS mine`,
            [inTag],
          ),
        )
        outsideInserts = Array.from({ length: 100 }, () => insert(c, outTag))
        await sleep(30)
        await Promise.all(Array.from({ length: 10 }, () => insert(tx, inTag)))
        // Then the transaction is rolled back: whatever ran inside it is gone.
        throw new Error('roll it all back')
      })
      await assert.rejects(tx, /roll it all back/)
      const rs = await Promise.all(outside)
      for (const r of rs) {
        const row = r.rows[0]!
        assert.notEqual(row.x, txXid)
        assert.equal(row.x, null, 'no transaction id: not inside any transaction')
        assert.equal(row.iso, 'read committed', 'not inside the serializable transaction')
        assert.equal(row.mine, 0, 'never sees the transaction\'s rows')
      }
      await Promise.all(outsideInserts)
      assert.equal(await committed(outTag), 100, 'outside inserts survive the rollback')
      assert.equal(await committed(inTag), 0)
    } finally {
      await c.end()
    }
  })

  test('outside queries issued before begin() (or in the same tick) run before BEGIN', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('before')
      const early = insert(c, tag)
      const tx = c.begin(async (tx) => {
        await insert(tx, tag)
        throw new Error('rollback')
      })
      const sameTick = insert(c, tag)
      await assert.rejects(tx, /rollback/)
      await Promise.all([early, sameTick])
      assert.equal(await committed(tag), 2, 'both outside inserts survive the rollback')
    } finally {
      await c.end()
    }
  })

  test('concurrent begin() calls on one client run one after the other', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
    const c = await openClient()
    try {
      const tag = uniqueName('serial')
      const run = (name: string) =>
        c.begin(async (tx) => {
          await insert(tx, `${tag}_${name}_start`)
          await sleep(30)
          await insert(tx, `${tag}_${name}_end`)
          return name
        })
      const results = await Promise.all([run('a'), run('b'), run('c')])
      assert.deepEqual(results, ['a', 'b', 'c'])
      const { rows } = await c.query<{ tag: string; xid: string }>(`SELECT tag, xid::text FROM ${t} WHERE tag LIKE $1 ORDER BY seq`, [`${tag}_%`])
      assert.deepEqual(
        rows.map((r) => r.tag.slice(tag.length + 1)),
        ['a_start', 'a_end', 'b_start', 'b_end', 'c_start', 'c_end'],
      )
      // Each pair in its own transaction.
      assert.equal(rows[0]!.xid, rows[1]!.xid)
      assert.notEqual(rows[1]!.xid, rows[2]!.xid)
      assert.equal(rows[2]!.xid, rows[3]!.xid)
    } finally {
      await c.end()
    }
  })

  test('end() during a transaction lets it commit, then closes', serverOnly(NOT_ON_PGLITE.secondSession), async () => {
    const c = await openClient()
    const tag = uniqueName('end_during')
    const tx = c.begin(async (tx) => {
      await sleep(50)
      await insert(tx, tag)
      return 'committed'
    })
    await sleep(10)
    const ended = c.end()
    await assert.rejects(c.query('SELECT 1'), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
    assert.equal(await tx, 'committed')
    await ended
    assert.equal(await committed(tag), 1)
    await assert.rejects(c.begin(async () => undefined), (e: unknown) => e instanceof ConnectionError && e.code === 'PG_CONNECTION_ENDED')
  })

  test('end() during a transaction waits on no timer: it goes on the moment the transaction lets go', { timeout: 10_000, ...serverOnly(NOT_ON_PGLITE.secondSession) }, async () => {
    // end() once looked every 5 ms whether the transaction was over; with
    // timers stopped, that end() never resolved.
    const c = await openClient()
    const tag = uniqueName('end_no_timer')
    let open!: () => void
    const gate = new Promise<void>((r) => (open = r))
    const tx = c.begin(async (tx) => {
      await gate
      await insert(tx, tag)
    })
    await sleep(20)
    mock.timers.enable({ apis: ['setTimeout'] })
    try {
      const ended = c.end()
      open()
      await tx
      await ended
      assert.equal(c.closed, true)
    } finally {
      mock.timers.reset()
    }
    assert.equal(await committed(tag), 1)
  })
})

describe('savepoints', () => {
  test('nested: an inner failure is rolled back to its savepoint, the outer work is kept; inner success is released', async () => {
    const tag = uniqueName('sp')
    const result = await db.begin(async (tx) => {
      await insert(tx, `${tag}_a`)
      const outer = await tx.savepoint(async (sp1) => {
        await insert(sp1, `${tag}_b`)
        const inner = await sp1
          .savepoint(async (sp2) => {
            await insert(sp2, `${tag}_c`)
            await sp2.query('SELECT 1/0')
          })
          .catch((e: unknown) => e)
        assert.ok(inner instanceof PgError && inner.code === '22012')
        // The transaction is usable again after the inner rollback.
        await insert(sp1, `${tag}_d`)
        const released = await sp1.savepoint(async (sp2) => {
          await insert(sp2, `${tag}_e`)
          return 'released'
        })
        assert.equal(released, 'released')
        return 'outer'
      })
      assert.equal(outer, 'outer')
      // A thrown error (not a failed statement) rolls back too.
      await tx
        .savepoint(async (sp) => {
          await insert(sp, `${tag}_f`)
          throw new Error('nope')
        })
        .catch(() => undefined)
      return 'ok'
    })
    assert.equal(result, 'ok')
    const { rows } = await db.query<{ tag: string }>(`SELECT tag FROM ${t} WHERE tag LIKE $1 ORDER BY seq`, [`${tag}_%`])
    assert.deepEqual(
      rows.map((r) => r.tag.slice(tag.length + 1)),
      ['a', 'b', 'd', 'e'],
    )
  })

  test('a savepoint whose function swallowed a failed statement rejects and is rolled back; the transaction goes on', async () => {
    const tag = uniqueName('sp_swallow')
    const result = await db.begin(async (tx) => {
      await insert(tx, `${tag}_kept`)
      const e = await tx
        .savepoint(async (sp) => {
          await insert(sp, `${tag}_lost`)
          await sp.query('SELECT 1/0').catch(() => undefined)
          return 'swallowed'
        })
        .catch((x: unknown) => x)
      assert.ok(e instanceof TransactionError, `the savepoint could not be released: ${String(e)}`)
      assert.equal(e.code, 'PG_TRANSACTION_ROLLED_BACK')
      assert.ok(e.cause instanceof PgError && e.cause.code === '25P02')
      await insert(tx, `${tag}_after`)
      return 'committed'
    })
    assert.equal(result, 'committed')
    assert.equal(await committed(`${tag}_kept`), 1)
    assert.equal(await committed(`${tag}_lost`), 0)
    assert.equal(await committed(`${tag}_after`), 1)
  })

  test('queries on a savepoint or a transaction that is over are refused and never run', async () => {
    const tag = uniqueName('over')
    let saved: Transaction | undefined
    let savedSp: Transaction | undefined
    let late: Promise<unknown> | undefined
    await db.begin(async (tx) => {
      saved = tx
      await tx.savepoint(async (sp) => {
        savedSp = sp
      })
      await assert.rejects(insert(savedSp!, `${tag}_sp`), ArgumentError)
      // A query issued after the function returned, from a timer it left behind.
      setTimeout(() => {
        late = insert(tx, `${tag}_late`).catch((e: unknown) => e)
      }, 20)
    })
    await assert.rejects(insert(saved!, tag), ArgumentError)
    await assert.rejects(saved!.simpleQuery(`INSERT INTO ${t} (tag) VALUES ('${tag}')`), ArgumentError)
    await assert.rejects(saved!.savepoint(async () => undefined), ArgumentError)
    await sleep(40)
    assert.ok((await late) instanceof ArgumentError)
    assert.equal(await committed(tag), 0)
    assert.equal(await committed(`${tag}_sp`), 0)
    assert.equal(await committed(`${tag}_late`), 0)
  })
})
