// pipegres/pglite: a Client over PGlite (PostgreSQL in WebAssembly) in this
// process, through the same protocol code as over a socket. The categories of
// the core suites that make sense on one session run here: types both ways,
// pipelining, errors, transactions, COPY in and out, cursors and streams,
// LISTEN/NOTIFY on the session itself, and what PGlite cannot do (a second
// session, cancelling, TLS), each failing with an error that names the cause.

import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, test } from 'node:test'
import { PGlite } from '@electric-sql/pglite'
import { ArgumentError, ConnectionError, PgError, createPool, type Client } from '../../../../src/index.js'
import { connectPGlite, pgliteStream, type PGliteLike } from '../../../../src/integrations/pglite/index.js'
import { ensureDataDirTarball, openCachedPGlite } from '../../../support/servers/pglite-datadir.js'

// From the data directory initdb made once (test/support/servers/pglite-datadir.ts): what is
// tested is the client on an instance, not PGlite's own initdb, which README example 12 runs.
const pglite = await openCachedPGlite()

async function withPGlite<T>(fn: (db: Client) => Promise<T>): Promise<T> {
  const db = await connectPGlite(pglite)
  try {
    return await fn(db)
  } finally {
    await db.end()
  }
}

describe('types', () => {
  const cases: Array<[sql: string, value: unknown, expected?: unknown]> = [
    ['int4', 42],
    ['int8', 9007199254740993n],
    ['float8', 1.5],
    ['numeric', '12345678901234567890.123456789'],
    ['bool', true],
    ['text', 'hé ☃ 𝄞'],
    ['bytea', Buffer.from([0, 1, 255])],
    ['uuid', '0e3b7c1e-8f7a-4a3b-9a59-3c1d2b6f0a11'],
    ['jsonb', { a: [1, 'two', null] }],
    ['timestamptz', new Date('2026-11-27T10:11:12.345Z')],
    ['date', '2026-11-27'],
    ['int4[]', [1, null, 3]],
    ['text[]', ['a', 'b,c', '"q"']],
    ['interval', '1 day 02:03:04'],
  ]
  test('values round-trip as parameters and results, text and binary', async () => {
    await withPGlite(async (db) => {
      for (const [type, value, expected] of cases) {
        const { rows } = await db.query(`SELECT $1::${type} AS v`, [value])
        const got = rows[0]!.v
        const want = expected ?? value
        if (type === 'interval') assert.equal(String((await db.query(`SELECT $1::interval::text AS v`, [value])).rows[0]!.v), '1 day 02:03:04', type)
        else assert.deepEqual(got, want, type)
      }
      // The same values sent as SQL literals and read back agree with the parameters.
      const { rows } = await db.query("SELECT 42::int4 AS a, 'hé'::text AS b, '{1,NULL,3}'::int4[] AS c, 'true'::bool AS d")
      assert.deepEqual({ ...rows[0] }, { a: 42, b: 'hé', c: [1, null, 3], d: true })
    })
  })
})

describe('pipelining', () => {
  test('many queries in flight come back in order, each to its own caller', async () => {
    await withPGlite(async (db) => {
      const n = 500
      const all = await Promise.all(Array.from({ length: n }, (_, i) => db.query('SELECT $1::int AS i, repeat($2, $1 % 7) AS s', [i, 'x'])))
      all.forEach((r, i) => assert.deepEqual({ ...r.rows[0] }, { i, s: 'x'.repeat(i % 7) }))
    })
  })

  test('an error in the middle of a pipeline fails only its own query', async () => {
    await withPGlite(async (db) => {
      const results = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => db.query(i % 10 === 5 ? 'SELECT 1 / 0' : 'SELECT $1::int AS i', i % 10 === 5 ? [] : [i])))
      results.forEach((r, i) => {
        if (i % 10 === 5) {
          assert.equal(r.status, 'rejected')
          assert.ok((r as PromiseRejectedResult).reason instanceof PgError)
          assert.equal(((r as PromiseRejectedResult).reason as PgError).code, '22012')
        } else assert.equal((r as PromiseFulfilledResult<{ rows: Array<Record<string, unknown>> }>).value.rows[0]!.i, i)
      })
      assert.equal((await db.query('SELECT 7 AS x')).rows[0]!.x, 7)
    })
  })
})

describe('errors', () => {
  test('server errors carry their fields and leave the client usable', async () => {
    await withPGlite(async (db) => {
      await db.query('CREATE TABLE err_t (id int PRIMARY KEY)')
      await db.query('INSERT INTO err_t VALUES (1)')
      const err = await db.query('INSERT INTO err_t VALUES (1)').catch((e: unknown) => e)
      assert.ok(err instanceof PgError)
      assert.equal(err.code, '23505')
      assert.equal(err.table, 'err_t')
      const syntax = await db.query('SELEKT 1').catch((e: unknown) => e)
      assert.ok(syntax instanceof PgError && syntax.code === '42601')
      assert.equal((await db.query('SELECT count(*)::int AS n FROM err_t')).rows[0]!.n, 1)
      await db.query('DROP TABLE err_t')
    })
  })
})

describe('transactions', () => {
  test('commit keeps, rollback undoes, a savepoint undoes only its part', async () => {
    await withPGlite(async (db) => {
      await db.query('CREATE TABLE tx_t (n int)')
      await db.begin(async (tx) => {
        await tx.query('INSERT INTO tx_t VALUES (1)')
        await tx.savepoint(async (sp) => {
          await sp.query('INSERT INTO tx_t VALUES (2)')
          throw new Error('undo the savepoint')
        }).catch(() => {})
      })
      await db.begin(async (tx) => {
        await tx.query('INSERT INTO tx_t VALUES (3)')
        throw new Error('undo the transaction')
      }).catch(() => {})
      assert.deepEqual((await db.query('SELECT n FROM tx_t ORDER BY n')).rows.map((r) => r.n), [1])
      await db.query('DROP TABLE tx_t')
    })
  })

  test('a client ended inside a transaction leaves PGlite outside it, without its prepared statements', async () => {
    const first = await connectPGlite(pglite)
    await first.query('CREATE TABLE left_t (n int)')
    await first.query('BEGIN')
    await first.query('INSERT INTO left_t VALUES (1)')
    await first.query('SELECT $1::int AS same_statement', [1])
    await first.end()
    assert.equal((await pglite.query<{ n: number }>('SELECT count(*)::int AS n FROM left_t')).rows[0]!.n, 0)
    // The next client prepares statements under the same names without a clash.
    await withPGlite(async (db) => {
      assert.equal(db.transactionStatus, 'I')
      assert.equal((await db.query('SELECT $1::int AS same_statement', [2])).rows[0]!.same_statement, 2)
      await db.query('DROP TABLE left_t')
    })
  })
})

describe('COPY', () => {
  test('rows go in with COPY FROM STDIN and come out with COPY TO STDOUT', async () => {
    await withPGlite(async (db) => {
      await db.query('CREATE TABLE copy_t (id int, name text)')
      const rows = Array.from({ length: 2000 }, (_, i) => [i, `name ${i}\t"${i}"`])
      assert.equal((await db.copyFromRows('copy_t', rows, { columns: ['id', 'name'] })).rowCount, 2000)
      const out: unknown[][] = []
      for await (const row of db.copyToRows('SELECT id, name FROM copy_t ORDER BY id', { rowMode: 'array' })) out.push(row as unknown as unknown[])
      assert.deepEqual(out, rows)
      const stream = db.copyTo('COPY (SELECT id FROM copy_t WHERE id < 3 ORDER BY id) TO STDOUT')
      const chunks: Buffer[] = []
      for await (const chunk of stream) chunks.push(chunk as Buffer)
      assert.equal(Buffer.concat(chunks).toString(), '0\n1\n2\n')
      await db.query('DROP TABLE copy_t')
    })
  })

  test('COPY FROM STDIN inside a transaction leaves the transaction usable and is undone by its rollback', async () => {
    await withPGlite(async (db) => {
      await db.query('CREATE TABLE copy_tx (id int)')
      await db.query('BEGIN')
      assert.equal((await db.copyFromRows('copy_tx', [[1], [2]])).rowCount, 2)
      assert.equal(db.transactionStatus, 'T')
      assert.equal((await db.query('SELECT count(*)::int AS n FROM copy_tx')).rows[0]!.n, 2)
      await db.query('ROLLBACK')
      assert.equal((await db.query('SELECT count(*)::int AS n FROM copy_tx')).rows[0]!.n, 0)
      await db.query('DROP TABLE copy_tx')
    })
  })

  test('a COPY FROM STDIN that fails before it begins fails alone, and one through query() is refused without harm', async () => {
    await withPGlite(async (db) => {
      const missing = await db.simpleQuery('COPY no_such_table FROM STDIN').catch((e: unknown) => e)
      assert.ok(missing instanceof Error, String(missing))
      const viaQuery = await db.query('COPY (SELECT 1) TO STDOUT').then(() => 'ran', (e: unknown) => e)
      assert.ok(viaQuery === 'ran' || viaQuery instanceof Error)
      await db.query('CREATE TABLE copy_q (id int)')
      const refused = await db.query('COPY copy_q FROM STDIN').catch((e: unknown) => e)
      assert.ok(refused instanceof PgError, String(refused))
      assert.equal(refused.code, '0A000')
      assert.match(refused.message, /copyFrom\(\)/)
      assert.equal((await db.query('SELECT 3 AS three')).rows[0]!.three, 3)
      await db.query('DROP TABLE copy_q')
    })
  })

  // The second COPY FROM STDIN can get no data on PGlite: it once waited for it, blocking the process for good.
  test('two COPY FROM STDIN in one query fail with an ArgumentError, the first undone with the second', async () => {
    await withPGlite(async (db) => {
      await db.query('CREATE TABLE copy_two (id int)')
      const s = db.copyFrom('COPY copy_two FROM STDIN; COPY copy_two FROM STDIN')
      s.end('1\n2\n')
      await assert.rejects(s.result, (e: unknown) => e instanceof ArgumentError && /another COPY FROM STDIN/.test(e.message))
      assert.equal((await db.query('SELECT count(*)::int AS n FROM copy_two')).rows[0]!.n, 0)
      assert.equal((await db.copyFromRows('copy_two', [[3]])).rowCount, 1)
      await db.query('DROP TABLE copy_two')
    })
  })
})

describe('cursors and streams', () => {
  test('a cursor reads in batches and a stream row by row', async () => {
    await withPGlite(async (db) => {
      const sizes: number[] = []
      let sum = 0
      for await (const rows of db.cursor('SELECT generate_series(1, 2500) AS n', [], { batchSize: 1000 })) {
        sizes.push(rows.length)
        for (const r of rows) sum += r.n as number
      }
      assert.deepEqual(sizes, [1000, 1000, 500])
      assert.equal(sum, (2500 * 2501) / 2)
      let count = 0
      for await (const row of db.stream('SELECT generate_series(1, $1::int) AS n', [3000])) count += row.n === count + 1 ? 1 : 0
      assert.equal(count, 3000)
    })
  })
})

describe('LISTEN / NOTIFY', () => {
  test('a notification sent on the session reaches its listener', async () => {
    await withPGlite(async (db) => {
      const got: string[] = []
      const listener = await db.listen('pglite chan', (payload) => got.push(payload))
      await db.notify('pglite chan', 'hello')
      await db.query('SELECT 1')
      assert.deepEqual(got, ['hello'])
      await listener.unlisten()
    })
  })
})

describe('starting, and handing the session back', () => {
  /** `new PGlite()`, not yet ready when it returns; from the cached data directory, which spares initdb. */
  const startingPGlite = async () => new PGlite({ loadDataDir: new Blob([await readFile(await ensureDataDirTarball())]) })

  /** The shared instance, its exchanges failing as a broken instance's would while `failing()` says so. */
  function failingWhile(failing: () => boolean): PGliteLike {
    return {
      execProtocolRaw: (message, options) => (failing() ? Promise.reject(new Error('made to fail')) : pglite.execProtocolRaw(message, options)),
      runExclusive: (fn) => pglite.runExclusive(fn),
      get closed() {
        return pglite.closed
      },
    }
  }

  test('connectPGlite(new PGlite()) waits for the instance to be ready', async () => {
    const own = await startingPGlite()
    try {
      assert.equal(own.ready, false, 'the instance was ready already: this test needs one still starting')
      const db = await connectPGlite(own)
      assert.equal((await db.query('SELECT 1 AS one')).rows[0]!.one, 1)
      await db.end()
      // Handed back: the next client has the session.
      const again = await connectPGlite(own)
      await again.end()
    } finally {
      await own.close()
    }
  })

  test('a connection attempt that failed gives the session back: the retry connects', async () => {
    // The first startup fails without an answer; the client asks again (for protocol 3.0), and gets the session.
    // (Run first of those that fail: afterwards the client asks this host for 3.0 straight away, and does not retry.)
    let exchanges = 0
    const db = await connectPGlite(failingWhile(() => exchanges++ === 0))
    try {
      assert.equal((await db.query('SELECT 2 AS two')).rows[0]!.two, 2)
    } finally {
      await db.end()
    }
  })

  test('a connect that failed on every attempt gives the session back to the next client', async () => {
    let failing = true
    const broken = failingWhile(() => failing)
    const err = await connectPGlite(broken).catch((e: unknown) => e)
    assert.ok(err instanceof ConnectionError, String(err))
    assert.match(err.message, /made to fail/)
    failing = false
    const db = await connectPGlite(broken)
    assert.equal((await db.query('SELECT 3 AS three')).rows[0]!.three, 3)
    await db.end()
  })

  test('a connect that timed out while the instance was starting gives the session back', async () => {
    const own = await startingPGlite()
    try {
      const err = await connectPGlite(own, { connectTimeout: 1 }).catch((e: unknown) => e)
      assert.ok(err instanceof ConnectionError && err.code === 'PG_CONNECT_TIMEOUT', String(err))
      const db = await connectPGlite(own)
      assert.equal((await db.query('SELECT 4 AS four')).rows[0]!.four, 4)
      await db.end()
    } finally {
      await own.close()
    }
  })
})

describe('what PGlite cannot do', () => {
  test('a second client while one is open is refused with the reason', async () => {
    await withPGlite(async () => {
      const err = await connectPGlite(pglite).catch((e: unknown) => e)
      assert.ok(err instanceof ConnectionError, String(err))
      assert.match(err.message, /single session/)
    })
  })

  test('a pool of one shares the session; its queries pipeline through it', async () => {
    const pool = createPool({ host: 'pglite', sslmode: 'disable', user: 'postgres', database: 'postgres', stream: pgliteStream(pglite), max: 1 })
    try {
      const all = await Promise.all(Array.from({ length: 100 }, (_, i) => pool.query('SELECT $1::int AS i', [i])))
      all.forEach((r, i) => assert.equal(r.rows[0]!.i, i))
    } finally {
      await pool.end()
    }
  })

  test('a query timeout cannot cancel inside PGlite: the cancel fails, the query still finishes', async () => {
    await withPGlite(async (db) => {
      const r = await db.query('SELECT pg_sleep(0.2), 1 AS one', [], { timeout: 20 }).then(
        (ok) => ok.rows[0]!.one,
        (e: unknown) => e,
      )
      // Either outcome names what happened: the result, or an error; never a hang or a lost connection.
      assert.ok(r === 1 || r instanceof Error, String(r))
      assert.equal((await db.query('SELECT 2 AS two')).rows[0]!.two, 2)
    })
  })

  test('TLS and network settings are ArgumentErrors naming the cause', async () => {
    for (const options of [{ sslmode: 'require' as const }, { sslmode: 'verify-full' as const }, { sslrootcert: 'system' }]) {
      await assert.rejects(async () => connectPGlite(pglite, options), (e: unknown) => e instanceof ArgumentError && /PGlite runs in this process/.test(e.message))
    }
    for (const key of ['host', 'port', 'connectionString', 'stream']) {
      await assert.rejects(async () => connectPGlite(pglite, { [key]: 'x' } as never), (e: unknown) => e instanceof ArgumentError && e.message.includes(key))
    }
    await assert.rejects(async () => connectPGlite({} as never), ArgumentError)
  })

  test('settings a server reads at connection time are ArgumentErrors (PGlite would ignore them); SET works once connected', async () => {
    for (const options of [{ applicationName: 'app' }, { params: { TimeZone: 'Asia/Tokyo' } }, { options: '-c search_path=x' }, { replication: true }]) {
      const key = Object.keys(options)[0]!
      await assert.rejects(async () => connectPGlite(pglite, options), (e: unknown) => e instanceof ArgumentError && e.message.includes(key) && /SET/.test(e.message))
    }
    await withPGlite(async (db) => {
      await db.query("SET TimeZone TO 'Asia/Tokyo'")
      assert.equal((await db.query<{ tz: string }>("SELECT current_setting('TimeZone') AS tz")).rows[0]!.tz, 'Asia/Tokyo')
      await db.query('RESET TimeZone')
    })
  })

  test('a closed PGlite fails the client with a ConnectionError, not a hang', async () => {
    // A copy of the shared instance, to close without touching it: cloning skips the initdb a new PGlite runs (seconds of WebAssembly).
    const own = await pglite.clone()
    const db = await connectPGlite(own)
    assert.equal((await db.query('SELECT 1 AS x')).rows[0]!.x, 1)
    await own.close()
    const err = await db.query('SELECT 1').catch((e: unknown) => e)
    assert.ok(err instanceof ConnectionError, String(err))
    await db.end()
    await assert.rejects(connectPGlite(own), ConnectionError)
  })
})
