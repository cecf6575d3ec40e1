// test-needs: pgbouncer
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError, connect, createPool, PgError, type Client, type ClientOptions, type Pool, type PoolOptions } from '../../../src/index.js'
import { findPgBouncer, startPgBouncer, type PgBouncerOptions, type RunningPgBouncer } from '../../support/servers/pgbouncer.js'
import { adminQuery, getTestServer } from '../../support/servers/test-server.js'
import { uniqueName } from '../../support/client.js'

// Real PgBouncer (Debian's package) in front of the managed test server, with
// pipegres's default settings. PgBouncer 1.18 refuses a 3.2 startup outright,
// and in transaction mode hands each transaction to whichever of its server
// connections is free, so named statements do not survive between Syncs.

const installed = findPgBouncer() !== undefined
const required = process.env.PIPEGRES_REQUIRE_PGBOUNCER === '1'
const skip = !installed && !required ? 'pgbouncer is not installed (apt-get install pgbouncer)' : false

const bouncers: RunningPgBouncer[] = []
const clients: (Client | Pool)[] = []
let table = ''

async function bouncer(options: PgBouncerOptions): Promise<string> {
  const server = await getTestServer()
  const b = await startPgBouncer(server, options)
  bouncers.push(b)
  return `postgres://${server.superuser.user}@127.0.0.1:${b.port}/postgres?sslmode=disable`
}

async function client(url: string, extra: ClientOptions = {}): Promise<Client> {
  const c = await connect({ connectionString: url, ...extra })
  clients.push(c)
  return c
}

function pool(url: string, extra: PoolOptions = {}): Pool {
  const p = createPool({ connectionString: url, max: 3, ...extra })
  clients.push(p)
  return p
}

before(async () => {
  if (skip) return
  table = uniqueName('bouncer')
  await adminQuery(`CREATE TABLE ${table} (id int PRIMARY KEY, actor text NOT NULL)`)
})

after(async () => {
  await Promise.allSettled(clients.map((c) => c.end()))
  await Promise.allSettled(bouncers.map((b) => b.stop()))
  if (table) await adminQuery(`DROP TABLE IF EXISTS ${table}`)
})

/** What the loads need: a client, a pool or a transaction. */
type Actor = Pick<Client, 'query'>

/**
 * Pipelined SELECTs of three statement texts, each result checked against its
 * own query; repeated in rounds so that statements prepared in one round are
 * executed again in the next, on whatever server connection PgBouncer gives.
 * Deep pipelines (1,500 queries in flight per client) have their own files:
 * pgbouncer-deep-118 and pgbouncer-deep-124.
 */
async function selectLoad(actor: Actor, who: string, rounds: number, perRound: number): Promise<number> {
  let checked = 0
  for (let r = 0; r < rounds; r++) {
    const pending: Promise<void>[] = []
    for (let i = 0; i < perRound; i++) {
      const n = r * perRound + i
      const tag = `${who}:${n}`
      switch (n % 3) {
        case 0:
          pending.push(actor.query<{ n: number; tag: string }>('SELECT $1::int AS n, $2::text AS tag', [n, tag]).then((res) => assert.deepEqual(res.rows, [{ n, tag }])))
          break
        case 1:
          pending.push(actor.query<{ m: number; tag: string }>('SELECT $1::int + 1 AS m, $2::text AS tag', [n, tag]).then((res) => assert.deepEqual(res.rows, [{ m: n + 1, tag }])))
          break
        default:
          pending.push(
            actor
              .query<{ s: string }>('SELECT $1::text || $2::text || $3::text AS s', [tag, '/', String(n)])
              .then((res) => assert.deepEqual(res.rows, [{ s: `${tag}/${n}` }])),
          )
      }
    }
    await Promise.all(pending)
    checked += pending.length
  }
  return checked
}

/** Pipelined INSERTs of ids no other actor uses: a statement run twice would hit the primary key. */
async function insertLoad(actor: Actor, who: string, first: number, count: number, inFlight = 100): Promise<void> {
  for (let from = 0; from < count; from += inFlight) {
    const pending: Promise<unknown>[] = []
    for (let i = from; i < Math.min(count, from + inFlight); i++) {
      const id = first + i
      pending.push(actor.query<{ id: number }>(`INSERT INTO ${table} (id, actor) VALUES ($1, $2) RETURNING id`, [id, who]).then((res) => assert.deepEqual(res.rows, [{ id }])))
    }
    await Promise.all(pending)
  }
}

async function rowsOf(who: string[]): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>()
  const r = await adminQuery(`SELECT actor, id FROM ${table} WHERE actor = ANY('{${who.join(',')}}'::text[]) ORDER BY id`)
  for (const [actor, id] of r.rows as [string, string][]) {
    const list = out.get(actor) ?? []
    list.push(Number(id))
    out.set(actor, list)
  }
  return out
}

const range = (first: number, count: number): number[] => Array.from({ length: count }, (_, i) => first + i)

test('default settings connect through PgBouncer, which refuses a protocol 3.2 startup', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const c = await client(url)
  assert.equal(c.protocolVersion, '3.0')
  assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }])
  // The refusal is remembered for the host: the next connection asks for 3.0 at once.
  const again = await client(url)
  assert.equal(again.protocolVersion, '3.0')
})

test('transaction mode, 2 server connections: 3 clients and a pool, thousands of pipelined queries each, every result its own, no statement run twice', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const actors: [string, Client | Pool][] = [
    ['t-c1', await client(url)],
    ['t-c2', await client(url)],
    ['t-c3', await client(url)],
    ['t-pool', pool(url)],
  ]
  const counts = await Promise.all(actors.map(([who, a]) => selectLoad(a, who, 40, 100)))
  assert.deepEqual(counts, [4000, 4000, 4000, 4000])
  await Promise.all(actors.map(([who, a], k) => insertLoad(a, who, 100_000 + k * 10_000, 2000)))
  const rows = await rowsOf(actors.map(([who]) => who))
  actors.forEach(([who], k) => assert.deepEqual(rows.get(who), range(100_000 + k * 10_000, 2000), who))
})

test('transaction mode: batches from several clients, each one transaction on one server connection, none run twice, a failed one rolled back whole', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const actors: [string, Client | Pool][] = [
    ['b-c1', await client(url)],
    ['b-c2', await client(url)],
    ['b-pool', pool(url)],
  ]
  await Promise.all(
    actors.map(async ([who, a], k) => {
      const first = 700_000 + k * 10_000
      for (let round = 0; round < 5; round++) {
        const pending: Promise<unknown>[] = []
        for (let n = 0; n < 10; n++) {
          const base = first + (round * 10 + n) * 10
          const batch = a.batch((b) => {
            b.query('SELECT pg_backend_pid() AS pid')
            for (let i = 0; i < 10; i++) b.query(`INSERT INTO ${table} (id, actor) VALUES ($1, $2) RETURNING id`, [base + i, who])
            b.query('SELECT pg_backend_pid() AS pid')
            // Every fifth batch fails at its end: none of its rows may stay.
            if (n % 5 === 4) b.query('SELECT 1 / 0')
          })
          pending.push(
            n % 5 === 4
              ? assert.rejects(batch, (e) => e instanceof PgError && e.code === '22012' && e.batchIndex === 12)
              : batch.then((r) => {
                  assert.deepEqual(r.slice(1, 11).map((x) => x.rows[0]), range(base, 10).map((id) => ({ id })))
                  assert.equal(r[0]!.rows[0]!.pid, r[11]!.rows[0]!.pid, 'one server connection for the whole batch')
                }),
          )
        }
        await Promise.all(pending)
      }
    }),
  )
  const rows = await rowsOf(actors.map(([who]) => who))
  actors.forEach(([who], k) => {
    const want = range(0, 50)
      .filter((b) => b % 5 !== 4)
      .flatMap((b) => range(700_000 + k * 10_000 + b * 10, 10))
    assert.deepEqual(rows.get(who), want, who)
  })
})

test('transaction mode with prepare: false: unnamed statements, still pipelined', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const actors: [string, Client | Pool][] = [
    ['u-c1', await client(url, { prepare: false })],
    ['u-c2', await client(`${url}&prepare=false`)],
    ['u-c3', await client(url, { prepare: false })],
    ['u-pool', pool(url, { prepare: false })],
  ]
  const counts = await Promise.all(actors.map(([who, a]) => selectLoad(a, who, 30, 100)))
  assert.deepEqual(counts, [3000, 3000, 3000, 3000])
  await Promise.all(actors.map(([who, a], k) => insertLoad(a, who, 200_000 + k * 10_000, 1000)))
  const rows = await rowsOf(actors.map(([who]) => who))
  actors.forEach(([who], k) => assert.deepEqual(rows.get(who), range(200_000 + k * 10_000, 1000), who))
})

test('transaction mode: a transaction per client, committed or rolled back as a whole', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const actors: [string, Client | Pool][] = [
    ['x-c1', await client(url)],
    ['x-c2', await client(url)],
    ['x-c3', await client(url)],
    ['x-pool', pool(url)],
  ]
  // Statements are prepared outside the transactions first, as an application would.
  await Promise.all(actors.map(([who, a]) => selectLoad(a, who, 3, 100)))
  const perActor = 40
  await Promise.all(
    actors.map(async ([who, a], k) => {
      const base = 300_000 + k * 10_000
      for (let t = 0; t < perActor; t++) {
        const ids = [base + t * 3, base + t * 3 + 1, base + t * 3 + 2]
        const rollback = t % 4 === 3
        const work = a.begin(async (tx) => {
          const inserted = await Promise.all(ids.map((id) => tx.query<{ id: number }>(`INSERT INTO ${table} (id, actor) VALUES ($1, $2) RETURNING id`, [id, who])))
          assert.deepEqual(inserted.map((r) => r.rows[0]!.id), ids)
          const seen = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE id = ANY($1::int[])`, [ids])
          assert.deepEqual(seen.rows, [{ n: 3 }], 'the transaction sees its own rows: one server connection throughout')
          await selectLoad(tx, who, 1, 3)
          if (rollback) throw new Error('roll back')
        })
        if (rollback) await assert.rejects(work, /roll back/)
        else await work
      }
    }),
  )
  const rows = await rowsOf(actors.map(([who]) => who))
  actors.forEach(([who], k) => {
    const want = range(0, perActor)
      .filter((t) => t % 4 !== 3)
      .flatMap((t) => range(300_000 + k * 10_000 + t * 3, 3))
    assert.deepEqual(rows.get(who), want, who)
  })
})

/**
 * Takes every server connection of a pool of 2 with a transaction each, then
 * ends the one not on `keepPid`: the next transaction of anyone else can only
 * run on that freed connection. Returns the function that ends the other.
 */
async function freeAllBut(holders: Client[], keepPid: number): Promise<{ release(): Promise<void> }> {
  const gates = new Map<number, () => void>()
  const holding = holders.map((o) =>
    o.begin(async (tx) => {
      const pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      await new Promise<void>((resolve) => gates.set(pid, resolve))
    }),
  )
  while (gates.size < holders.length) await new Promise((r) => setTimeout(r, 5))
  assert.ok(gates.has(keepPid), 'one transaction holds the chosen server connection')
  for (const [pid, open] of gates) if (pid !== keepPid) open()
  return {
    async release() {
      gates.get(keepPid)!()
      await Promise.all(holding)
    },
  }
}

test('transaction mode: a transaction that lands on another server connection than its statements were prepared on', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const c = await client(url)
  const holders = [await client(url), await client(url)]
  // Prepared while c is alone: on one server connection.
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
  await selectLoad(c, 'y-c', 1, 30)
  await c.query(`INSERT INTO ${table} (id, actor) VALUES ($1, $2)`, [500_000, 'y-c'])
  const other = await freeAllBut(holders, pid)
  try {
    await c.begin(async (tx) => {
      const on = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      assert.notEqual(on, pid, 'the transaction runs on the other server connection')
      await selectLoad(tx, 'y-c', 1, 30)
      await tx.query(`INSERT INTO ${table} (id, actor) VALUES ($1, $2)`, [500_001, 'y-c'])
    })
  } finally {
    await other.release()
  }
  assert.deepEqual((await rowsOf(['y-c'])).get('y-c'), [500_000, 500_001])
})

test('transaction mode: streams, cursors and COPY keep their server connection to the end, beside other clients', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const c = await client(url)
  const busy = await client(url)
  const load = selectLoad(busy, 'z-busy', 25, 100)
  let sum = 0
  for await (const row of c.stream<{ n: number }>('SELECT generate_series(1, $1::int) AS n', [20_000], { highWaterMark: 100 })) sum += row.n
  assert.equal(sum, (20_000 * 20_001) / 2)
  const sizes: number[] = []
  for await (const rows of c.cursor<{ n: number }>('SELECT generate_series(1, 2500) AS n', [], { batchSize: 1000 })) sizes.push(rows.length)
  assert.deepEqual(sizes, [1000, 1000, 500])
  const copied = await c.copyFromRows(table, Array.from({ length: 500 }, (_, i) => [600_000 + i, 'z-copy']), { columns: ['id', 'actor'] })
  assert.equal(copied.rowCount, 500)
  assert.equal(await load, 2500)
  assert.deepEqual((await rowsOf(['z-copy'])).get('z-copy'), range(600_000, 500))
})

test('session mode, 2 server connections: clients keep their statements, and a new client after them starts clean', { skip }, async () => {
  const url = await bouncer({ poolMode: 'session', poolSize: 2 })
  const c1 = await client(url)
  const c2 = await client(url)
  const counts = await Promise.all([selectLoad(c1, 's-c1', 3, 1000), selectLoad(c2, 's-c2', 3, 1000)])
  assert.deepEqual(counts, [3000, 3000])
  await c1.begin(async (tx) => {
    await insertLoad(tx, 's-c1', 400_000, 200)
  })
  await c1.end()
  // c1's server connection goes back to PgBouncer (DISCARD ALL) and to c3.
  const c3 = await client(url)
  assert.equal(await selectLoad(c3, 's-c3', 2, 500), 1000)
  const p = pool(url, { max: 1 })
  await c2.end()
  assert.equal(await selectLoad(p, 's-pool', 2, 500), 1000)
  const rows = await rowsOf(['s-c1'])
  assert.deepEqual(rows.get('s-c1'), range(400_000, 200))
})

test('what transaction mode cannot keep: a holdable cursor is missing on another server connection, with a clear server error', { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const c = await client(url)
  const [o1, o2] = [await client(url), await client(url)]
  const declared = await c.simpleQuery<{ pid: number }>('DECLARE held_cursor CURSOR WITH HOLD FOR SELECT generate_series(1, 3) AS n; SELECT pg_backend_pid() AS pid')
  const cursorPid = declared[1]!.rows[0]!.pid
  // Both server connections taken, the one without the cursor freed: the FETCH can only run there.
  const other = await freeAllBut([o1, o2], cursorPid)
  await assert.rejects(c.simpleQuery('FETCH 1 FROM held_cursor'), (e: unknown) => e instanceof PgError && e.code === '34000')
  await other.release()
})

test("pooler: 'transaction' refuses what transaction mode cannot keep, before sending it, and the rest works", { skip }, async () => {
  const url = await bouncer({ poolMode: 'transaction', poolSize: 2 })
  const c = await client(`${url}&pooler=transaction`)
  const p = pool(url, { pooler: 'transaction' })
  const refused = (what: string) => (e: unknown) => e instanceof ArgumentError && e.message.startsWith(`${what} cannot work through a transaction-mode pooler (pooler: 'transaction')`)
  for (const db of [c, p]) {
    await assert.rejects(db.listen('jobs', () => {}), refused('LISTEN'))
    await assert.rejects(db.query('SET search_path = app'), refused('SET'))
    await assert.rejects(db.simpleQuery('SELECT 1; SET statement_timeout = 1'), refused('SET'))
    await assert.rejects(db.query('DECLARE c CURSOR WITH HOLD FOR SELECT 1'), refused('DECLARE ... WITH HOLD'))
    await assert.rejects(db.query('CREATE TEMP TABLE t (a int)'), refused('CREATE TEMP TABLE'))
    await assert.rejects(
      db.batch((b) => {
        b.query('SELECT 1')
        b.query('SET search_path = app')
      }),
      (e: unknown) => e instanceof ArgumentError && e.message.startsWith("batch statement 1: SET cannot work through a transaction-mode pooler (pooler: 'transaction')"),
    )
    // What ends with its transaction is fine.
    const shown = await db.begin(async (tx) => {
      await tx.query("SET LOCAL application_name = 'inside'")
      return (await tx.query<{ name: string }>("SELECT current_setting('application_name') AS name")).rows[0]!.name
    })
    assert.equal(shown, 'inside')
    const sizes: number[] = []
    for await (const rows of db.cursor<{ n: number }>('SELECT generate_series(1, 250) AS n', [], { batchSize: 100 })) sizes.push(rows.length)
    assert.deepEqual(sizes, [100, 100, 50])
    assert.equal(await selectLoad(db, `tp-${db === c ? 'c' : 'p'}`, 3, 100), 300)
  }
  // Nothing refused reached the server: its sessions have no LISTEN and no setting from here.
  const check = await client(url)
  assert.deepEqual((await check.query('SELECT pg_listening_channels() AS c')).rows, [])
})

test("pooler: 'session' keeps named statements behind a session-mode pooler, whose backend pids look made up", { skip }, async () => {
  const url = await bouncer({ poolMode: 'session', poolSize: 2 })
  const prepared = async (c: Client): Promise<number> => {
    for (let i = 0; i < 3; i++) await c.query('SELECT $1::int AS n', [i])
    return Number((await c.query('SELECT count(*) AS n FROM pg_prepared_statements')).rows[0]!.n)
  }
  // Without the option the pooler's made-up pid makes the client use unnamed statements. One made-up
  // 32-bit key in a thousand falls among real pids (up to 2^22) and passes for a server's: connect again then.
  let unsaid = await client(url)
  for (let i = 0; i < 5 && unsaid.processId > 0 && unsaid.processId <= 2 ** 22; i++) {
    await unsaid.end()
    unsaid = await client(url)
  }
  assert.equal(await prepared(unsaid), 0)
  await unsaid.end()
  const said = await client(url, { pooler: 'session' })
  assert.ok((await prepared(said)) >= 1)
  await said.query('SET search_path = public')
  assert.equal(await said.listen('fine_here', () => {}).then((l) => l.unlisten()), undefined)
})
