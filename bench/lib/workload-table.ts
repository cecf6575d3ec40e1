// The benchmark's workloads and, for each, the clients and variants it runs
// (the runner, bench/run.ts, measures them; bench/clients/*.ts implement them).

export interface Variant {
  client: string
  variant: string
  label: string
  /** Runs only where the clients' Node has the global Temporal (26 and later). */
  needsTemporal?: boolean
  /** The build/bench directory whose client script runs it (--baseline: another tree's pipegres); this tree's by default. */
  benchDir?: string
}

export interface Workload {
  name: string
  title: string
  unit: 'row' | 'query' | 'cancel' | 'message' | 'request' | 'change'
  /** 'latency': report the median time per repetition instead of a rate. */
  show?: 'rate' | 'latency'
  size: number
  quickSize: number
  variants: Variant[]
  /** Runs without a server (codec microbenchmarks): no server CPU column. */
  serverless?: boolean
}

const v = (client: string, variant = '', label = client): Variant => ({ client, variant, label })
const NATIVE = v('pg', 'native', 'pg-native (pg.native, libpq)')
const BUN = v('bun', '', "Bun's SQL (Bun runtime)")
/** W4c rows per repetition, by rows per query. */
const SMALL_READ_SIZES = { '1': 30_000, '10': 200_000, '100': 400_000 } as const

export const WORKLOADS: Workload[] = [
  {
    name: 'sequential',
    title: 'W1 Single-row SELECT by primary key (uuid), each awaited before the next',
    unit: 'query',
    size: 20_000,
    quickSize: 3_000,
    variants: [v('pipegres'), v('pg'), NATIVE, v('postgres'), v('postgres-pipegres', '', 'pipegres/postgres (postgres.js API)'), BUN],
  },
  {
    name: 'sequential-one-core',
    title: 'W1 on one core: the same with the client and the server pinned to the same CPU (what a query costs both)',
    unit: 'query',
    size: 20_000,
    quickSize: 3_000,
    variants: [v('pipegres'), v('pg'), NATIVE, v('postgres'), v('postgres-pipegres', '', 'pipegres/postgres (postgres.js API)'), BUN],
  },
  {
    name: 'pipelined',
    title: 'W2 Single-row SELECT by primary key, all in flight on one connection',
    unit: 'query',
    size: 100_000,
    quickSize: 20_000,
    variants: [
      v('pipegres'),
      v('pipegres', 'traced', 'pipegres, with a pipegres:query subscriber'),
      v('pipegres', 'batch', 'pipegres batch() of 100, all in flight'),
      v('pg', 'pipeline', 'pg (pipeline: true)'),
      v('pg'),
      NATIVE,
      v('postgres'),
      v('postgres', 'tagged', 'postgres (tagged template)'),
      v('postgres-pipegres', '', 'pipegres/postgres (postgres.js API)'),
      v('postgres-pipegres', 'tagged', 'pipegres/postgres (tagged template)'),
      BUN,
      v('pgbench', '1', 'pgbench -M prepared, pipelines of 100 (ceiling)'),
    ],
  },
  {
    name: 'pool',
    title: 'W3 Single-row SELECT by primary key, all in flight over a pool of 4 connections',
    unit: 'query',
    size: 100_000,
    quickSize: 20_000,
    variants: [
      v('pipegres', '', 'pipegres Pool'),
      v('pg', '', 'pg Pool'),
      v('pg', 'native', 'pg-native Pool'),
      v('postgres', '', 'postgres (max: 4)'),
      v('postgres-pipegres', '', 'pipegres/postgres (max: 4)'),
      v('bun', '', "Bun's SQL (max: 4)"),
      v('pgbench', '4', 'pgbench -M prepared -c 4, pipelines of 100 (ceiling)'),
    ],
  },
  {
    // One file per client in bench/clients/app-*.ts (see bench/lib/app.ts); add a client with one line here.
    name: 'app',
    title: 'App: 64 concurrent requests, each awaiting three single-row SELECTs by primary key (uuid), over a pool of 4 connections',
    unit: 'request',
    size: 20_000,
    quickSize: 4_000,
    variants: [
      v('app-pipegres', '', 'pipegres Pool'),
      v('app-kysely-pipegres', '', 'Kysely on pipegres'),
      v('app-kysely-pg', '', 'Kysely on pg (PostgresDialect)'),
      v('app-kysely-postgres', '', 'Kysely on postgres.js (minimal dialect)'),
      v('app-kysely-postgres-pipegres', '', 'Kysely on pipegres/postgres (the same dialect)'),
      v('app-drizzle-pipegres', '', 'Drizzle on pipegres'),
      v('app-drizzle-pg', '', 'Drizzle on pg (node-postgres)'),
      v('app-drizzle-postgres', '', 'Drizzle on postgres.js'),
      v('app-drizzle-postgres-pipegres', '', 'Drizzle on pipegres/postgres (its postgres-js driver)'),
      v('app-prisma-pipegres', '', 'Prisma on pipegres'),
      v('app-bun', '', "Bun's SQL (max: 4, Bun runtime)"),
    ],
  },
  {
    // One file per client in bench/clients/hot-*.ts (see bench/lib/hot-keys.ts).
    name: 'hot-keys',
    title: 'Hot keys: 256 concurrent requests, each awaiting three single-row SELECTs by primary key (uuid) with Zipf-distributed keys (exponent 1.3) over 100,000 users, pool of 4; pipegres with and without coalesce',
    unit: 'request',
    size: 20_000,
    quickSize: 2_000,
    variants: [
      v('hot-pipegres', '', 'pipegres Pool'),
      v('hot-pipegres', 'coalesce', 'pipegres Pool, coalesce: true'),
      v('hot-pg', '', 'pg Pool'),
      v('hot-postgres', '', 'postgres (max: 4)'),
      v('hot-bun', '', "Bun's SQL (max: 4, Bun runtime)"),
    ],
  },
  {
    // The app workload through ORMs that take the pg module as their driver (bench/clients/app-pg-orms-*.ts):
    // each once with pg, once with pipegres/pg.
    name: 'app-pg-orms',
    title: 'App through ORMs on pg and on pipegres/pg: 64 concurrent requests, each awaiting three single-row SELECTs by primary key (uuid), pool of 4',
    unit: 'request',
    size: 20_000,
    quickSize: 4_000,
    variants: [
      v('app-pg-orms-sequelize', 'pipegres', 'Sequelize on pipegres/pg'),
      v('app-pg-orms-sequelize', 'pg', 'Sequelize on pg'),
      v('app-pg-orms-typeorm', 'pipegres', 'TypeORM on pipegres/pg'),
      v('app-pg-orms-typeorm', 'pg', 'TypeORM on pg'),
      v('app-pg-orms-knex', 'pipegres', 'Knex on pipegres/pg'),
      v('app-pg-orms-knex', 'pg', 'Knex on pg'),
    ],
  },
  {
    name: 'users-read',
    title: 'W4 Read users rows (uuid, text, text, text) as objects in one query',
    unit: 'row',
    size: 100_000,
    // At 20,000 rows a repetition took ~20 ms, and where a major collection fell decided the ranking.
    quickSize: 100_000,
    variants: [v('pipegres', 'binary', 'pipegres (binary)'), v('pipegres', 'unprepared', 'pipegres (prepare: false)'), v('pipegres', 'lazy', "pipegres (binary, rowMode 'lazy', every column read)"), v('pg'), NATIVE, v('postgres'), v('postgres-pipegres', '', 'pipegres/postgres (postgres.js API)'), BUN],
  },
  {
    name: 'typed-read',
    title: 'W4 Read the whole typed table as objects (int4, int8, float8, numeric, bool, timestamptz, date, uuid, jsonb, bytea, text[])',
    unit: 'row',
    size: 200_000,
    quickSize: 50_000,
    variants: [v('pipegres', 'binary', 'pipegres (binary)'), v('pipegres', 'unprepared', 'pipegres (prepare: false)'), v('pipegres', 'lazy', "pipegres (binary, rowMode 'lazy', every column read)"), v('pipegres', 'columns', "pipegres (binary, rowMode 'columns': no row objects)"), v('pg'), NATIVE, v('postgres'), v('postgres-pipegres', '', 'pipegres/postgres (postgres.js API)'), BUN],
  },
  ...(['1', '10', '100'] as const).map(
    (k): Workload => ({
      name: `small-read-${k}`,
      title: `W4c Results of ${k} user row${k === '1' ? '' : 's'} (uuid, text, text, text) as objects, 64 queries at a time over a pool of 4 connections`,
      unit: 'row',
      // As many queries as a repetition of a few seconds takes for the slowest peer: 30,000 of 1 row, 20,000 of 10, 4,000 of 100.
      size: SMALL_READ_SIZES[k],
      quickSize: SMALL_READ_SIZES[k] / 5,
      variants: [v('pipegres', '', 'pipegres Pool'), v('pg', '', 'pg Pool'), v('postgres', '', 'postgres (max: 4)'), v('bun', '', "Bun's SQL (max: 4)")],
    }),
  ),
  {
    name: 'stream',
    title: 'W5 Stream every users row, row by row or batch by batch, without keeping them',
    unit: 'row',
    size: 1_000_000,
    quickSize: 100_000,
    variants: [
      v('pipegres', 'stream', 'pipegres stream()'),
      v('pipegres', 'stream-lazy', "pipegres stream(), rowMode 'lazy' (only the email column decoded)"),
      v('pipegres', 'cursor', 'pipegres cursor(1000)'),
      v('pg', 'query-stream', 'pg + pg-query-stream (batchSize 1000)'),
      v('pg', 'cursor', 'pg + pg-cursor read(1000)'),
      v('postgres', 'cursor', 'postgres cursor(1000)'),
      v('postgres', 'forEach', 'postgres forEach()'),
      v('bun', 'stream', "Bun's SQL (no streaming: one result)"),
    ],
  },
  {
    name: 'copy-from-rows',
    title: 'W6 COPY FROM STDIN of JS rows (int4, text, int8) into an emptied table: pipegres encodes them itself, the others through the benchmark\'s hand-written encoders (timed)',
    unit: 'row',
    size: 200_000,
    quickSize: 20_000,
    variants: [
      v('pipegres', 'binary', 'pipegres copyFromRows() (binary)'),
      v('pipegres', 'text', 'pipegres copyFromRows() (text)'),
      v('pg', 'binary', 'pg + pg-copy-streams (binary)'),
      v('pg', 'text', 'pg + pg-copy-streams (text)'),
      v('postgres', 'binary', 'postgres writable() (binary)'),
      v('postgres', 'text', 'postgres writable() (text)'),
      v('bun', 'binary', "Bun's SQL writable() (binary)"),
      v('bun', 'text', "Bun's SQL writable() (text)"),
    ],
  },
  {
    name: 'copy-from-text',
    title: 'W6 COPY FROM STDIN of ready-made text COPY data (64 KiB chunks) into an emptied table',
    unit: 'row',
    size: 200_000,
    quickSize: 20_000,
    variants: [v('pipegres', '', 'pipegres copyFrom()'), v('pg', '', 'pg + pg-copy-streams from()'), v('postgres', '', 'postgres writable()'), v('bun', '', "Bun's SQL writable()")],
  },
  {
    name: 'inserts',
    title: 'W7 Single-row INSERTs (uuid, text, text, text), all in flight on one connection',
    unit: 'query',
    size: 50_000,
    quickSize: 10_000,
    variants: [
      v('pipegres'),
      v('pipegres', 'batch', 'pipegres batch() of 100, all in flight'),
      v('pg', 'pipeline', 'pg (pipeline: true)'),
      v('pg'),
      NATIVE,
      v('postgres'),
      v('postgres', 'tagged', 'postgres (tagged template)'),
      v('postgres-pipegres', '', 'pipegres/postgres (postgres.js API)'),
      v('postgres-pipegres', 'tagged', 'pipegres/postgres (tagged template)'),
      BUN,
      v('pgbench', '1', 'pgbench -M prepared, pipelines of 100 (server-made uuids, table not emptied between runs)'),
    ],
  },
  {
    name: 'copy-to',
    title: 'COPY TO STDOUT of users rows, counting bytes (pipegres copyToRows(): decoded rows)',
    unit: 'row',
    size: 1_000_000,
    quickSize: 100_000,
    variants: [
      v('pipegres', '', 'pipegres copyTo()'),
      v('pg', '', 'pg + pg-copy-streams to()'),
      v('postgres', '', 'postgres readable()'),
      v('bun', '', "Bun's SQL readable()"),
      v('pipegres', 'rows', 'pipegres copyToRows() (binary)'),
    ],
  },
  {
    // bench/lib/replication.ts: subscribed first, timed from the first change received to the last.
    name: 'replication',
    title: 'Logical replication: one transaction inserting the rows (int4, text, int4, timestamptz), decoded from pgoutput as it streams',
    unit: 'change',
    size: 1_000_000,
    quickSize: 100_000,
    variants: [
      v('replication-pipegres', '', 'pipegres subscribe()'),
      v('replication-pipegres', 'binary', 'pipegres subscribe() (binary)'),
      v('replication-postgres', '', 'postgres subscribe()'),
      v('replication-pglr', '', 'pg-logical-replication (pgoutput)'),
    ],
  },
  {
    name: 'replication-tx',
    title: 'Logical replication: single-row transactions committed by a DO loop while streaming',
    unit: 'change',
    size: 100_000,
    quickSize: 20_000,
    variants: [
      v('replication-pipegres', '', 'pipegres subscribe()'),
      v('replication-pipegres', 'binary', 'pipegres subscribe() (binary)'),
      v('replication-postgres', '', 'postgres subscribe()'),
      v('replication-pglr', '', 'pg-logical-replication (pgoutput)'),
    ],
  },
  {
    name: 'cancel',
    title: 'Cancelling a running query: time from abort() (pipegres) or cancel() (postgres.js, Bun) to the rejection',
    unit: 'cancel',
    show: 'latency',
    size: 1,
    quickSize: 1,
    variants: [v('pipegres'), v('postgres'), BUN],
  },
  {
    name: 'codec-decode',
    title: 'Codec, no server: decode captured DataRows of the typed table into row objects',
    unit: 'row',
    size: 20_000,
    quickSize: 5_000,
    serverless: true,
    variants: [
      v('codec', 'binary', 'pipegres, binary results'),
      v('codec', 'text', 'pipegres, text results'),
      { ...v('codec', 'binary-temporal', 'pipegres, binary results, types: { temporal: true }'), needsTemporal: true },
    ],
  },
  {
    name: 'codec-encode',
    title: 'Codec, no server: encode Bind + Execute for a query\'s parameters',
    unit: 'message',
    size: 100_000,
    quickSize: 20_000,
    serverless: true,
    variants: [v('codec', 'lookup', 'pipegres, W2 lookup (uuid)'), v('codec', 'insert', 'pipegres, W7 insert (uuid, 3 text)'), v('codec', 'typed', 'pipegres, a typed-table row (11 types)')],
  },
]
