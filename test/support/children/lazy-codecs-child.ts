// One scenario of test/integration/types/lazy-codecs.test.ts, in a process of
// its own so that the rarer built-in codecs (types/codecs/extra.ts) have not
// loaded when it starts. Spawned as
//
//   node lazy-codecs-child.js <scenario> <connection string>
//
// It prints one JSON line: whether the codecs had loaded before the scenario's
// first query, and after it, and what the scenario read (bigints as strings).

import { connect, Range, typed, type Client } from '../../../src/index.js'
import { extraCodecs } from '../../../src/types/builtins.js'

export const SCENARIOS = ['query', 'pipelined-params', 'typed', 'stream', 'cursor', 'batch', 'simple', 'composite', 'copy', 'describe', 'core-only'] as const
export type Scenario = (typeof SCENARIOS)[number]

export interface LazyReport {
  loadedAtStart: boolean
  loadedAtEnd: boolean
  result: unknown
}

/** Rarer built-in types, their arrays, a range, a record: the row every reading scenario reads first. */
export const RARE_SELECT = `SELECT '10.1.2.3/8'::inet AS inet, '08:00:2b:01:02:03'::macaddr AS mac, B'101' AS bits,
  point(1.5, 2) AS point, 'a:1 b:2'::tsvector AS ts, int4range(1, 5) AS range,
  ARRAY['1.2.3.4'::inet, NULL] AS inets, ROW(1, '1.1.1.1'::inet) AS rec, 7 AS n`

const scenarios: Record<Scenario, (db: Client) => Promise<unknown>> = {
  query: async (db) => (await db.query(RARE_SELECT)).rows,
  // A statement first run with a string, then at once with objects only its codec writes, pipelined behind it.
  'pipelined-params': async (db) => {
    const sql = 'SELECT $1::point AS p, $2::int4range AS r'
    const first = db.query(sql, ['(1,2)', '[1,3)'])
    const rest = Array.from({ length: 20 }, (_, i) => db.query(sql, [{ x: i, y: -i }, new Range(i, i + 2)]))
    return (await Promise.all([first, ...rest])).map((r) => r.rows[0])
  },
  typed: async (db) => (await db.query('SELECT $1 AS p, $2 AS c', [typed({ x: 3, y: 4 }, 'point'), typed({ x: 0, y: 0, radius: 2 }, 'circle')])).rows,
  stream: async (db) => {
    const rows: unknown[] = []
    for await (const row of db.stream(`${RARE_SELECT} FROM generate_series(1, 3)`)) rows.push(row)
    return rows
  },
  cursor: async (db) => {
    const rows: unknown[] = []
    for await (const batch of db.cursor(`${RARE_SELECT} FROM generate_series(1, 5)`, [], { batchSize: 2 })) rows.push(...batch)
    return rows
  },
  batch: async (db) => {
    // The statement is prepared and ready before the batch meets a value only its type's codec writes.
    await db.query('SELECT $1::int4range AS r', ['[1,2)'])
    const results = await db.batch((b) => {
      b.query('SELECT $1::int4range AS r', [new Range(5, 9)])
      b.query(RARE_SELECT)
    })
    return results.map((r) => r.rows)
  },
  simple: async (db) => (await db.simpleQuery(`${RARE_SELECT}; SELECT '[2,4)'::int8range AS r`)).map((r) => r.rows),
  composite: async (db) => {
    await db.query('DROP TYPE IF EXISTS lazy_host CASCADE')
    await db.query('CREATE TYPE lazy_host AS (name text, addr inet, spot point)')
    try {
      return (await db.query(`SELECT ROW('db', '10.0.0.9', point(1, 1))::lazy_host AS h, ARRAY[ROW('x', '::1', point(0, 2))::lazy_host] AS hs`)).rows
    } finally {
      await db.query('DROP TYPE lazy_host')
    }
  },
  copy: async (db) => {
    await db.query('CREATE TEMP TABLE lazy_copy (a inet, p point, r int4range)')
    await db.copyFromRows('lazy_copy', [[ '10.0.0.1', { x: 1, y: 2 }, new Range(1, 4) ]])
    const rows: unknown[] = []
    for await (const row of db.copyToRows('SELECT * FROM lazy_copy')) rows.push(row)
    return rows
  },
  describe: async (db) => {
    const d = await db.describe('SELECT $1::inet AS a, $2::point AS p')
    return { params: d.parameters, fields: d.fields.map((f) => f.typeOid) }
  },
  'core-only': async (db) => (await db.query('SELECT 1::int4 AS a, $1::text AS b, now() IS NOT NULL AS c, ARRAY[1.5]::float8[] AS d', ['x'])).rows,
}

/** Runs one scenario on `db`: what it read. */
export function runScenario(scenario: Scenario, db: Client): Promise<unknown> {
  return scenarios[scenario](db)
}

/** JSON of what a scenario read: bigints as strings, ranges by their parts. */
export function json(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x instanceof Range ? { range: [x.lower, x.upper, x.lowerInclusive, x.upperInclusive, x.empty] } : x))
}

const isMain = process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop()!)
if (isMain) {
  const [scenario, url] = process.argv.slice(2) as [Scenario, string]
  const db = await connect(url)
  try {
    const loadedAtStart = extraCodecs() !== null
    const result = JSON.parse(json(await scenarios[scenario](db))) as unknown
    process.stdout.write(JSON.stringify({ loadedAtStart, loadedAtEnd: extraCodecs() !== null, result } satisfies LazyReport) + '\n')
  } finally {
    await db.end()
  }
}
