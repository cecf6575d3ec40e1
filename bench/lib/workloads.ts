import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import type { Untimed } from './measure.js'

// The SQL and the data of each workload, shared by every client so that all of
// them do the same work; and the checksum each computes over what it read.

export const TYPED_TABLE = 'bench_typed'
export const USERS_TABLE = 'bench_users'
/** The table W7 inserts into, emptied before every repetition. */
export const INSERT_TABLE = 'bench_insert'

/** Rows of the typed table: every column a different type. */
export function typedReadSql(size: number): string {
  return `SELECT id, i8, f8, num, flag, ts, d, u, j, by, tags FROM ${TYPED_TABLE} ORDER BY id LIMIT ${size}`
}

/** How many distinct users the single-row SELECTs cycle through. */
export const KEYS = 10_000

export const selectUserSql = `SELECT id, name, email FROM ${USERS_TABLE} WHERE id = $1`

/** The id of user number `n` (1-based): the same uuid the setup SQL gives it, md5('u' || n)::uuid. */
export function userKey(n: number): string {
  const h = createHash('md5').update(`u${n}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** The ids of users 1..n, computed before anything is timed. */
export function userKeys(n = KEYS): string[] {
  const keys = new Array<string>(n)
  for (let i = 0; i < n; i++) keys[i] = userKey(i + 1)
  return keys
}

/**
 * The checksum of a run of single-row SELECTs: how many answered, and how many
 * answered with the row their own key asked for (a misattributed reply would
 * lower the second number).
 */
export function checksumLookups(keys: readonly string[], rows: readonly ({ id?: unknown } | undefined)[]): string {
  let matched = 0
  for (let i = 0; i < rows.length; i++) if (rows[i]?.id === keys[i % keys.length]) matched++
  return `${rows.length}:${matched}`
}

/** W4c: the workloads of small results, by how many rows each query returns. */
export const SMALL_READS = { 'small-read-1': 1, 'small-read-10': 10, 'small-read-100': 100 } as const

/** Rows per query of a W4c workload. */
export function smallReadRows(workload: string): number {
  const k = (SMALL_READS as Record<string, number>)[workload]
  if (k === undefined) throw new Error(`${workload} is not a small-read workload`)
  return k
}

/** W4c: `rows` users from a key on, all columns (a prepared statement per size). */
export function smallReadSql(rows: number): string {
  return `SELECT id, name, email, password FROM ${USERS_TABLE} WHERE id >= $1 ORDER BY id LIMIT ${rows}`
}

/** How many requests W4c keeps in flight, as an application's concurrent requests would (the app workload's 64). */
export const SMALL_READ_CONCURRENCY = 64

/**
 * W4c: `queries` small reads, SMALL_READ_CONCURRENCY at a time, each awaited by
 * its own loop as a request handler would; query i reads from key i on. The
 * checksum is checksumUsers' over every row read.
 */
export async function smallReads(keys: readonly string[], queries: number, read: (key: string) => Promise<readonly { email?: unknown }[]>): Promise<string> {
  let next = 0
  let rows = 0
  let sum = 0
  const worker = async (): Promise<void> => {
    while (next < queries) {
      const i = next++
      const got = await read(keys[i % keys.length]!)
      rows += got.length
      for (const r of got) sum += (r.email as string).length
    }
  }
  await Promise.all(Array.from({ length: SMALL_READ_CONCURRENCY }, worker))
  return `${rows}:${sum}`
}

/** W4: the first `size` users, all columns. */
export function usersReadSql(size: number): string {
  return `SELECT id, name, email, password FROM ${USERS_TABLE} LIMIT ${size}`
}

/** W5: every user, streamed. */
export const usersStreamSql = `SELECT id, name, email, password FROM ${USERS_TABLE}`

/** The same checksum from any client's users rows: how many, and their emails' total length. */
export function checksumUsers(rows: readonly { email?: unknown }[]): string {
  let sum = 0
  for (const r of rows) sum += (r.email as string).length
  return `${rows.length}:${sum}`
}

/** The same checksum from any client's rows: how many, and the sum of one integer column. */
export function checksumRows(rows: readonly Record<string, unknown>[], key = 'id'): string {
  let sum = 0
  for (const r of rows) sum += Number(r[key])
  return `${rows.length}:${sum}`
}

/** W7: one user per statement. */
export const insertUserSql = `INSERT INTO ${INSERT_TABLE} (id, name, email, password) VALUES ($1, $2, $3, $4)`

/** The parameters of W7's `i`-th INSERT (0-based); ids are users beyond the users table's. */
export function insertParams(keys: readonly string[], i: number): [string, string, string, string] {
  return [keys[i]!, `new user ${i}`, `new${i}@example.com`, `pw-hash-${i}`]
}

/** Empties the insert table before each W7 repetition and checks what arrived after it. */
export function insertUntimed(query: (text: string) => Promise<string | undefined>): Untimed {
  return {
    before: async () => void (await query(`TRUNCATE ${INSERT_TABLE}`)),
    after: async (reported) =>
      `${reported} reported, ${await query(`SELECT count(*) || ':' || sum(hashtext(id::text || name || email || password)) AS check FROM ${INSERT_TABLE}`)} in the table`,
  }
}

/** Setup statements for the benchmark tables (run once by the runner). */
export function setupSql(typedRows: number, users: number): string[] {
  return [
    `DROP TABLE IF EXISTS ${TYPED_TABLE}, ${USERS_TABLE}, ${INSERT_TABLE}`,
    `CREATE TABLE ${TYPED_TABLE} (
       id int4 PRIMARY KEY, i8 int8, f8 float8, num numeric, flag bool, ts timestamptz, d date,
       u uuid, j jsonb, by bytea, tags text[])`,
    `INSERT INTO ${TYPED_TABLE}
       SELECT g, g * 1000003::int8, g / 7.0, (g * 3.14159)::numeric(12, 4), g % 2 = 0,
              '2024-01-01'::timestamptz + g * interval '1 second', '2024-01-01'::date + (g % 1000),
              md5(g::text)::uuid, jsonb_build_object('id', g, 'name', 'item ' || g, 'tags', jsonb_build_array('a', 'b')),
              decode(md5(g::text), 'hex'), ARRAY['tag' || (g % 10), 'x', 'y']
       FROM generate_series(1, ${typedRows}) g`,
    `CREATE TABLE ${USERS_TABLE} (id uuid PRIMARY KEY, name text, email text, password text)`,
    `INSERT INTO ${USERS_TABLE}
       SELECT md5('u' || g)::uuid, 'user ' || g, 'user' || g || '@example.com', md5('pw' || g)
       FROM generate_series(1, ${users}) g`,
    // Unlogged with autovacuum off, like the COPY table: the server's share of
    // a load stays small and the same for every client.
    `CREATE UNLOGGED TABLE ${INSERT_TABLE} (id uuid PRIMARY KEY, name text, email text, password text) WITH (autovacuum_enabled = off)`,
    `VACUUM ANALYZE ${TYPED_TABLE}, ${USERS_TABLE}`,
  ]
}

/** The table the COPY FROM workloads load, emptied before every repetition. */
export const COPY_TABLE = 'bench_copy_in'
export const COPY_COLUMNS = ['id', 'name', 'n'] as const

/** COPY TO of the first `size` users. */
export function copyToSql(size: number): string {
  return `COPY (${usersReadSql(size)}) TO STDOUT`
}

/**
 * Where every client's COPY TO stream is piped, counting bytes. pipeline()
 * rather than for await: postgres.js 3.4's readable(), read through its async
 * iterator, now and then never ends (the server done and idle; compare
 * porsager/postgres#917), and every client should be read the same way.
 */
export class ByteCounter extends Writable {
  bytes = 0
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.bytes += chunk.length
    done()
  }
}

export const copyFromSql = `COPY ${COPY_TABLE} (${COPY_COLUMNS.join(', ')}) FROM STDIN`
export const copyFromBinarySql = `${copyFromSql} (FORMAT binary)`

/** Setup statement of the COPY table. */
export function copySetupSql(): string[] {
  return [
    `DROP TABLE IF EXISTS ${COPY_TABLE}`,
    // Unlogged and never vacuumed behind the benchmark's back: the server's
    // share of a load is the same for every client, so keeping it small and
    // steady lets the clients' differences show.
    `CREATE UNLOGGED TABLE ${COPY_TABLE} (id int4, name text, n int8) WITH (autovacuum_enabled = off)`,
  ]
}

export type CopyRow = [id: number, name: string, n: number | null]

/**
 * Row `id` of every COPY FROM workload. A few names need escaping in the text
 * format and a few n are NULL, so that an encoder cannot get away with
 * skipping its escaping or NULL paths.
 */
function copyRow(id: number): CopyRow {
  const name = id % 100 === 0 ? `name\t${id}\\with\nspecials` : `name ${id} ${(id * 2654435761) % 4294967296}`
  return [id, name, id % 1000 === 0 ? null : id * 1000003]
}

/** The rows the COPY FROM workloads load, as an application would hold them. */
export function copyRows(size: number): CopyRow[] {
  const rows = new Array<CopyRow>(size)
  for (let i = 0; i < size; i++) rows[i] = copyRow(i + 1)
  return rows
}

function* lazyCopyRows(size: number): Generator<CopyRow> {
  for (let i = 0; i < size; i++) yield copyRow(i + 1)
}

const specials = /[\\\t\n\r]/
const specialsAll = /[\\\t\n\r]/g
const escapes: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }
const escapeChar = (c: string): string => escapes[c]!

/** A value as a field of the text COPY format, as an application would write it by hand. */
function textField(v: string | number | null): string {
  if (v === null) return '\\N'
  if (typeof v === 'number') return String(v)
  return specials.test(v) ? v.replace(specialsAll, escapeChar) : v
}

const CHUNK = 64 * 1024

/** Rows as text COPY data in chunks of about 64 KiB, cut at row boundaries. */
export function* encodeCopyText(rows: Iterable<CopyRow>): Generator<Buffer> {
  let s = ''
  for (const r of rows) {
    s += `${textField(r[0])}\t${textField(r[1])}\t${textField(r[2])}\n`
    if (s.length >= CHUNK) {
      yield Buffer.from(s)
      s = ''
    }
  }
  if (s.length > 0) yield Buffer.from(s)
}

const BINARY_HEADER = Buffer.from('PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0', 'latin1')

/**
 * Rows as binary COPY data (int4, text, int8) in chunks of about 64 KiB, as
 * an application would write it by hand for a client without a binary COPY
 * encoder of its own.
 */
export function* encodeCopyBinary(rows: Iterable<CopyRow>): Generator<Buffer> {
  let buf = Buffer.allocUnsafe(CHUNK + 4096)
  BINARY_HEADER.copy(buf, 0)
  let at = BINARY_HEADER.length
  for (const [id, name, n] of rows) {
    const nameLength = Buffer.byteLength(name)
    const need = 2 + 8 + 4 + nameLength + 12 + 2
    if (at + need > buf.length) {
      yield buf.subarray(0, at)
      buf = Buffer.allocUnsafe(Math.max(CHUNK + 4096, need))
      at = 0
    }
    at = buf.writeInt16BE(3, at)
    at = buf.writeInt32BE(4, at)
    at = buf.writeInt32BE(id, at)
    at = buf.writeInt32BE(nameLength, at)
    at += buf.write(name, at)
    if (n === null) at = buf.writeInt32BE(-1, at)
    else {
      at = buf.writeInt32BE(8, at)
      at = buf.writeBigInt64BE(BigInt(n), at)
    }
    if (at >= CHUNK) {
      yield buf.subarray(0, at)
      buf = Buffer.allocUnsafe(CHUNK + 4096)
      at = 0
    }
  }
  at = buf.writeInt16BE(-1, at)
  yield buf.subarray(0, at)
}

/**
 * The text COPY data of copyRows(size), encoded ahead of time; without ever
 * holding the rows, whose memory would otherwise hide the clients' in the
 * peak RSS.
 */
export function copyTextChunks(size: number): Buffer[] {
  return [...encodeCopyText(lazyCopyRows(size))]
}

/** What arrived in the table, cheap to compute yet sensitive to every column (escaping, NULLs, int8). */
const copyCheckSql = `SELECT count(*) || ':' || sum(id) || ':' || count(n) || ':' || sum(n) || ':' || sum(hashtext(name)) AS check FROM ${COPY_TABLE}`

/**
 * Empties the load table before each repetition and checks what arrived after
 * it, neither timed. `query` runs a statement and returns the `check` column
 * of its first row, if any.
 */
export function copyInUntimed(query: (text: string) => Promise<string | undefined>): Untimed {
  return {
    before: async () => void (await query(`TRUNCATE ${COPY_TABLE}`)),
    after: async (reported) => `${reported} reported, ${await query(copyCheckSql)} in the table`,
  }
}
