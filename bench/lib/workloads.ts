// The SQL of each workload, shared by every client so that all of them do the
// same work; and the checksum each computes over what it read.

export const TYPED_TABLE = 'bench_typed'
export const USERS_TABLE = 'bench_users'

/** Rows of the typed table: every column a different type. */
export function typedReadSql(size: number): string {
  return `SELECT id, i8, f8, num, flag, ts, d, u, j, by, tags FROM ${TYPED_TABLE} ORDER BY id LIMIT ${size}`
}

export const selectUserSql = `SELECT id, name, email FROM ${USERS_TABLE} WHERE id = $1`

/** The same checksum from any client's rows: how many, and the sum of one integer column. */
export function checksumRows(rows: readonly Record<string, unknown>[], key = 'id'): string {
  let sum = 0
  for (const r of rows) sum += Number(r[key])
  return `${rows.length}:${sum}`
}

/** Setup statements for the benchmark tables (run once by the runner). */
export function setupSql(typedRows: number, users: number): string[] {
  return [
    `DROP TABLE IF EXISTS ${TYPED_TABLE}, ${USERS_TABLE}`,
    `CREATE TABLE ${TYPED_TABLE} (
       id int4 PRIMARY KEY, i8 int8, f8 float8, num numeric, flag bool, ts timestamptz, d date,
       u uuid, j jsonb, by bytea, tags text[])`,
    `INSERT INTO ${TYPED_TABLE}
       SELECT g, g * 1000003::int8, g / 7.0, (g * 3.14159)::numeric(12, 4), g % 2 = 0,
              '2024-01-01'::timestamptz + g * interval '1 second', '2024-01-01'::date + (g % 1000),
              md5(g::text)::uuid, jsonb_build_object('id', g, 'name', 'item ' || g, 'tags', jsonb_build_array('a', 'b')),
              decode(md5(g::text), 'hex'), ARRAY['tag' || (g % 10), 'x', 'y']
       FROM generate_series(1, ${typedRows}) g`,
    `CREATE TABLE ${USERS_TABLE} (id int4 PRIMARY KEY, uid uuid, name text, email text, password text)`,
    `INSERT INTO ${USERS_TABLE}
       SELECT g, md5(g::text)::uuid, 'user ' || g, 'user' || g || '@example.com', md5('pw' || g)
       FROM generate_series(1, ${users}) g`,
    `VACUUM ANALYZE ${TYPED_TABLE}, ${USERS_TABLE}`,
  ]
}
