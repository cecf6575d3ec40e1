// Every object pipegres opens, held with `await using` and left both normally
// and by a throw; what the server says afterwards goes into the report that
// test/integration/project/dispose.test.ts checks. The file is run twice: compiled by
// tsc (whose target turns `await using` into helper calls: TypeScript's
// downlevel emit, on any Node), and as TypeScript source by a Node that strips
// types and runs the syntax natively (24 and later): `node
// dispose-scenarios.ts <connection string>` prints the report as JSON.
//
// It is handed pipegres (the test passes the compiled sources; run by itself,
// it loads the package by its own names, from dist/) and imports only types,
// so that Node can run the source as it is.

type Lib = typeof import('../../../src/index.js')
type ReplicationLib = typeof import('../../../src/replication.js')
type PgLib = typeof import('../../../src/integrations/pg/index.js')

class Boom extends Error {}

/** The scope threw Boom, and disposal neither swallowed nor replaced it. */
async function throws(scope: () => Promise<void>): Promise<boolean> {
  try {
    await scope()
    return false
  } catch (err) {
    return err instanceof Boom
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

export type DisposeReport = Record<string, unknown>

export async function disposeScenarios(lib: Lib, replication: ReplicationLib, pg: PgLib, url: string): Promise<DisposeReport> {
  const { connect, createPool, Client } = lib
  const { connectReplication, subscribe } = replication
  const { Client: PgClient, Pool: PgPool } = pg
  const report: DisposeReport = {}
  const observer = await connect(url)
  const unique = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const table = `dispose_${unique}`
  await observer.query(`CREATE TABLE ${table} (n int)`)
  const count = async (): Promise<number> => Number((await observer.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]!.n)

  /** The backend's state in pg_stat_activity, or 'gone' once it has ended (a Terminate is handled after the client's end resolves). */
  const backend = async (pid: number, until?: string): Promise<string> => {
    for (let i = 0; ; i++) {
      const { rows } = await observer.query<{ state: string | null }>('SELECT state FROM pg_stat_activity WHERE pid = $1', [pid])
      const state = rows.length === 0 ? 'gone' : (rows[0]!.state ?? 'unknown')
      if (until === undefined || state === until || i >= 100) return state
      await sleep(50)
    }
  }

  try {
    // --- Client from connect(), and new Client() ------------------------------
    let pid = 0
    {
      await using db = await connect(url)
      pid = db.processId
      await db.query('SELECT 1')
    }
    report.connectEnded = await backend(pid, 'gone')
    report.connectThrew = await throws(async () => {
      await using db = await connect(url)
      pid = db.processId
      throw new Boom()
    })
    report.connectEndedOnThrow = await backend(pid, 'gone')
    let client: InstanceType<Lib['Client']> | null = null
    report.newClientThrew = await throws(async () => {
      await using db = new Client(url)
      client = db
      pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      throw new Boom()
    })
    report.newClientEnded = await backend(pid, 'gone')
    report.newClientClosed = (client as InstanceType<Lib['Client']> | null)?.closed

    // --- Pool: its connections, a reservation, a transaction on it -----------
    const pids: number[] = []
    report.poolThrew = await throws(async () => {
      await using pool = createPool({ connectionString: url, max: 3 })
      {
        await using reserved = await pool.reserve()
        await reserved.query('BEGIN')
        pid = reserved.processId
        pids.push(pid)
        await reserved.query(`INSERT INTO ${table} VALUES (1)`)
      }
      // Released: the pool has it back, its transaction rolled back.
      report.reservationReleased = pool.reservedCount === 0
      report.reservationState = await backend(pid)
      report.reservationRolledBack = (await count()) === 0
      report.reservedThrew = await throws(async () => {
        await using reserved = await pool.reserve()
        await reserved.query('BEGIN')
        await reserved.query(`INSERT INTO ${table} VALUES (2)`)
        throw new Boom()
      })
      report.reservationReleasedOnThrow = pool.reservedCount === 0
      report.reservationRolledBackOnThrow = (await count()) === 0
      report.poolTxThrew = await throws(async () => {
        await using tx = await pool.startTransaction()
        await tx.query(`INSERT INTO ${table} VALUES (3)`)
        pids.push((await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid)
        throw new Boom()
      })
      report.poolTxRolledBack = (await count()) === 0
      report.poolTxReleased = pool.reservedCount === 0
      const all = await Promise.all([1, 2, 3].map(() => pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)')))
      pids.push(...all.map((r) => r.rows[0]!.pid))
      throw new Boom()
    })
    report.poolEnded = (await Promise.all([...new Set(pids)].map((p) => backend(p, 'gone')))).every((s) => s === 'gone')

    // --- On one client: transactions, cursors, streams, COPY, LISTEN ---------
    {
      await using db = await connect(url)
      pid = db.processId
      report.txThrew = await throws(async () => {
        await using tx = await db.startTransaction()
        await tx.query(`INSERT INTO ${table} VALUES (4)`)
        throw new Boom()
      })
      report.txRolledBack = (await count()) === 0 && db.transactionStatus === 'I'
      {
        await using tx = await db.startTransaction()
        await tx.query(`INSERT INTO ${table} VALUES (5)`)
        await tx.commit()
      }
      report.txCommittedKept = (await count()) === 1

      report.cursorThrew = await throws(async () => {
        await using cursor = db.cursor<{ n: number }>('SELECT n FROM generate_series(1, 100000) AS n', [], { batchSize: 10 })
        await cursor.read()
        // The portal is open: the session's extended query is under way (no Sync yet).
        report.cursorOpenState = await backend(pid)
        throw new Boom()
      })
      report.cursorClosedState = await backend(pid)
      {
        await using cursor = db.cursor('SELECT n FROM generate_series(1, 100000) AS n', [], { batchSize: 10 })
        await cursor.read()
      }
      report.cursorClosedNormally = await backend(pid)

      report.streamThrew = await throws(async () => {
        await using rows = db.stream<{ n: number }>('SELECT n, repeat(\'x\', 1000) FROM generate_series(1, 1000000) AS n', [], { highWaterMark: 16 })
        for await (const row of rows) if (row.n === 10) break
        throw new Boom()
      })
      report.streamEndedState = await backend(pid)
      report.streamPartlyReadThrew = await throws(async () => {
        await using rows = db.stream<{ n: number }>('SELECT n, repeat(\'x\', 1000) FROM generate_series(1, 1000000) AS n', [], { highWaterMark: 16 })
        await rows.next()
        // The server is held back by the unread rows: its query is running.
        report.streamRunningState = await backend(pid)
        throw new Boom()
      })
      report.streamCancelledState = await backend(pid)

      report.copyInThrew = await throws(async () => {
        await using copy = db.copyFrom(`COPY ${table} FROM STDIN`)
        copy.write('100\n101\n')
        throw new Boom()
      })
      report.copyInRolledBack = (await count()) === 1 && (await backend(pid)) === 'idle'
      {
        await using copy = db.copyFrom(`COPY ${table} FROM STDIN`)
        copy.end('200\n')
      }
      report.copyInEndedKept = (await count()) === 2
      report.copyOutThrew = await throws(async () => {
        await using out = db.copyTo('COPY (SELECT n, repeat(\'x\', 1000) FROM generate_series(1, 1000000) AS n) TO STDOUT')
        for await (const chunk of out) if ((chunk as Buffer).length > 0) break
        throw new Boom()
      })
      report.copyOutState = await backend(pid)

      report.listenThrew = await throws(async () => {
        await using listener = await db.listen(`chan_${unique}`, () => {})
        report.listening = (await db.query<{ c: string }>('SELECT pg_listening_channels() AS c')).rows.map((r) => r.c).includes(listener.channel)
        throw new Boom()
      })
      report.unlistened = (await db.query('SELECT pg_listening_channels()')).rows.length === 0
      report.clientWorksAfter = (await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one === 1
    }

    // --- Replication: a subscription, a raw connection -----------------------
    const publication = `dispose_pub_${unique}`
    await observer.query(`CREATE PUBLICATION ${publication} FOR TABLE ${table}`)
    try {
      const slot = `dispose_slot_${unique}`
      let walsender = 0
      report.subscriptionThrew = await throws(async () => {
        await using sub = subscribe(observer, { slot, publications: [publication], temporary: true })
        await sub.ready()
        walsender = sub.processId
        throw new Boom()
      })
      report.walsenderEnded = await backend(walsender, 'gone')
      report.temporarySlotDropped = (await observer.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [slot])).rows.length === 0
      report.replicationThrew = await throws(async () => {
        await using conn = await connectReplication(url)
        walsender = conn.processId
        await conn.identifySystem()
        throw new Boom()
      })
      report.replicationEnded = await backend(walsender, 'gone')
    } finally {
      await observer.query(`DROP PUBLICATION ${publication}`)
    }

    // --- pipegres/pg --------------------------------------------------------
    report.pgClientThrew = await throws(async () => {
      await using pg = new PgClient(url)
      await pg.connect()
      pid = pg.processID!
      throw new Boom()
    })
    report.pgClientEnded = await backend(pid, 'gone')
    report.pgPoolThrew = await throws(async () => {
      await using pool = new PgPool({ connectionString: url, max: 2 })
      {
        await using c = await pool.connect()
        pid = c.processID
        await c.query('BEGIN')
      }
      report.pgPoolClientReleased = pool.idleCount === pool.totalCount && pool.totalCount === 1
      report.pgPoolClientState = await backend(pid, 'idle')
      throw new Boom()
    })
    report.pgPoolEnded = await backend(pid, 'gone')
  } finally {
    await observer.query(`DROP TABLE ${table}`)
    await observer.end()
  }
  return report
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/')) && process.argv[2] !== undefined) {
  const [root, replicationEntry, compat]: string[] = ['pipegres', 'pipegres/replication', 'pipegres/pg']
  const lib = (await import(root!)) as Lib
  const replication = (await import(replicationEntry!)) as ReplicationLib
  const pg = (await import(compat!)) as PgLib
  process.stdout.write(`${JSON.stringify({ node: process.version, report: await disposeScenarios(lib, replication, pg, process.argv[2]) })}\n`)
}
