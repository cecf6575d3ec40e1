// One big-value case in a process of its own, so that the memory it takes is
// measured apart from the test runner and from other cases. Spawned by
// test/integration/protocol/big-values.test.ts as
//
//   node --expose-gc big-values-child.js <case> <bytes>
//
// with PIPEGRES_BIG_URL naming the database (unset: the PG* variables) and
// PIPEGRES_BIG_SSLMODE, if set, overriding its sslmode. It prints one JSON
// line (a ChildReport) and exits 0 if every step round-tripped its value
// unchanged, 1 otherwise. The test imports only its types.
//
// Memory is read from Linux's peak resident set size, reset before each step,
// so that a step's peak is its own and not that of making its value; each
// figure is relative to the process before any value existed, so it includes
// the caller's own copy of the value. Elsewhere only the lifetime peak is
// available and the figures are upper bounds.

import { createHash, randomFillSync } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { connect, typed, type Client } from '../../../src/index.js'

export interface StepReport {
  name: string
  ms: number
  /** Peak resident memory during the step, above the process's before any value was made. */
  peakAboveBaseline: number
  /** peakAboveBaseline over the case's value size. */
  ratio: number
  detail?: Record<string, unknown>
}

export interface ChildReport {
  case: string
  size: number
  baseline: number
  /** Resident memory the values themselves took, before any step. */
  valuesAboveBaseline: number
  /** True when each step's peak was measured on its own (peak reset supported). */
  peakReset: boolean
  steps: StepReport[]
  /** A small query on the same connection after all steps. */
  afterwards: 'ok' | string
  error?: string
  /** Milliseconds since the process started at which each phase ended (connected, values made, each step, afterwards, closed): where a slow run spent its time. */
  phases: Record<string, number>
}

const gc = (globalThis as { gc?: () => void }).gc

function rss(): number {
  return process.memoryUsage.rss()
}

let peakReset = true

/** Starts a new peak measurement at the current resident size. */
function resetPeak(): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5')
  } catch {
    peakReset = false
  }
}

function peak(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
    if (m) return Number(m[1]) * 1024
  } catch {
    // Not Linux: the lifetime peak below.
  }
  return process.resourceUsage().maxRSS * 1024
}

/** Collects garbage and lets freed array buffers go back before memory is read. */
async function settle(): Promise<void> {
  for (let i = 0; i < 2; i++) {
    gc?.()
    await new Promise((r) => setTimeout(r, 30))
  }
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const md5 = (b: Uint8Array): string => createHash('md5').update(b).digest('hex')

/** Random bytes (crypto's generator is fast enough for hundreds of MiB, and random data defeats TOAST compression). */
function randomBytes(n: number): Buffer {
  return randomFillSync(Buffer.allocUnsafeSlow(n))
}

// Characters safe inside a SQL string literal, 64 of them so that a byte maps to one by masking.
const LETTERS = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', 'latin1')

/** n bytes of random ASCII letters and digits. */
function asciiBytes(n: number): Buffer {
  const b = randomBytes(n)
  for (let i = 0; i < n; i++) b[i] = LETTERS[b[i]! & 63]!
  return b
}

// UTF-8 sequences of one to four bytes: a mixed text exercises every decoder path.
const SEQUENCES = ['a', 'é', 'ж', '€', '中', '😀', 'z', '𝄞'].map((c) => Buffer.from(c, 'utf8'))

/** About n bytes of UTF-8 mixing one- to four-byte characters (exactly n: the tail is ASCII). */
function utf8Bytes(n: number): Buffer {
  const out = Buffer.allocUnsafeSlow(n)
  const pick = randomBytes(1 << 16)
  let p = 0
  for (let i = 0; p + 4 <= n; i++) {
    const s = SEQUENCES[pick[i & 0xffff]! & 7]!
    for (let k = 0; k < s.length; k++) out[p + k] = s[k]!
    p += s.length
  }
  out.fill(0x61, p)
  return out
}

interface Step {
  name: string
  /** Runs the step; returns a check to run once the peak is read, so that checking does not count. */
  run(): Promise<() => Record<string, unknown> | void>
}

type CaseSetup = (db: Client, size: number) => Promise<Step[]>

function assertBytes(got: unknown, want: Buffer, what: string): Record<string, unknown> {
  if (!(got instanceof Uint8Array)) throw new Error(`${what}: got ${typeof got}, not bytes`)
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} bytes back instead of ${want.length}`)
  const a = sha256(got)
  const b = sha256(want)
  if (a !== b) throw new Error(`${what}: contents differ (sha256 ${a} instead of ${b})`)
  // Whether the value came back as a view of the message it arrived in (no second copy).
  return { sha256: a, sharesMessageBuffer: got.buffer.byteLength !== got.length || got.byteOffset !== 0 }
}

function assertText(got: unknown, want: string, what: string): Record<string, unknown> {
  if (typeof got !== 'string') throw new Error(`${what}: got ${typeof got}, not a string`)
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} characters back instead of ${want.length}`)
  if (got !== want) throw new Error(`${what}: contents differ`)
  return { chars: got.length }
}

const byteaRoundTrip = (warm: boolean): CaseSetup => async (db, size) => {
  const text = 'SELECT $1::bytea AS v'
  // An execution with a small value prepares and describes the statement, so the big one is bound by its type.
  if (warm) await db.query(text, [Buffer.from([1, 2, 3])])
  let value: Buffer | null = randomBytes(size)
  return [
    {
      name: warm ? 'prepared' : 'first',
      async run() {
        const r = await db.query<{ v: Buffer }>(text, [value])
        return () => {
          const detail = assertBytes(r.rows[0]!.v, value!, 'bytea')
          value = null
          return detail
        }
      },
    },
  ]
}

const textRoundTrip = (make: (n: number) => Buffer, both: boolean): CaseSetup => async (db, size) => {
  const text = 'SELECT $1::text AS v'
  const value = make(size).toString('utf8')
  const step = (name: string): Step => ({
    name,
    async run() {
      const r = await db.query<{ v: string }>(text, [value])
      return () => assertText(r.rows[0]!.v, value, 'text')
    },
  })
  // The first execution sends the string as untyped text; the second, bound by its described type, in binary.
  return both ? [step('first'), step('prepared')] : [step('first')]
}

const tableRoundTrip: CaseSetup = async (db, size) => {
  await db.query('CREATE TEMP TABLE big_values (id int PRIMARY KEY, b bytea)')
  const value = randomBytes(size)
  const select = 'SELECT b FROM big_values WHERE id = 1'
  // The statement's first execution is bound before its columns are known, so
  // its rows come in text (hex, twice the value's size) and are decoded into a
  // new buffer; later ones come in binary, and a value this large is then
  // returned as a view of the message it arrived in.
  const read = (name: string, binary: boolean): Step => ({
    name,
    async run() {
      const r = await db.query<{ b: Buffer }>(select)
      return () => {
        const detail = assertBytes(r.rows[0]!.b, value, name)
        if (detail.sharesMessageBuffer !== binary) throw new Error(`${name}: value ${binary ? 'copied' : 'shared'}, expected the ${binary ? 'binary' : 'text'} path`)
        return detail
      }
    },
  })
  return [
    {
      name: 'insert',
      async run() {
        // Declared as bytea, the value goes in binary even on the statement's first execution.
        const r = await db.query('INSERT INTO big_values VALUES (1, $1)', [typed(value, 'bytea')])
        return () => {
          if (r.rowCount !== 1) throw new Error(`insert: rowCount ${r.rowCount}`)
        }
      },
    },
    read('select-text', false),
    read('select-binary', true),
  ]
}

const queryText: CaseSetup = async (db, size) => {
  // A literal of `size` bytes inside a query that returns only its length and digest.
  const literal = asciiBytes(size)
  const want = { n: size, h: md5(literal) }
  const text = `SELECT length(x) AS n, md5(x) AS h FROM (SELECT '${literal.toString('latin1')}'::text AS x) s`
  // A string built by concatenation is flattened into one piece on first use: make that happen here, not in a step.
  text.includes('\0')
  return [
    {
      name: 'run',
      async run() {
        const r = await db.query<{ n: number; h: string }>(text)
        return () => {
          const got = r.rows[0]!
          if (got.n !== want.n || got.h !== want.h) throw new Error(`server saw ${got.n} bytes (md5 ${got.h}), expected ${want.n} (${want.h})`)
        }
      },
    },
    {
      name: 'cache',
      async run() {
        // How much query text the server holds as prepared statements for this session: a text this size should not be kept.
        const r = await db.query<{ n: string; longest: number | null }>(
          'SELECT count(*) AS n, max(length(statement)) AS longest FROM pg_prepared_statements',
        )
        return () => ({ preparedStatements: Number(r.rows[0]!.n), longestText: r.rows[0]!.longest })
      },
    },
  ]
}

const PARAMS = 256

/** PARAMS random strings of `each` ASCII bytes, and the md5 of them all (a function of its own, so that no closure keeps the bytes they came from). */
function textPieces(each: number): { values: string[]; want: string } {
  const all = asciiBytes(each * PARAMS)
  return { values: Array.from({ length: PARAMS }, (_, i) => all.toString('latin1', i * each, (i + 1) * each)), want: md5(all) }
}

const manyText: CaseSetup = async (db, size) => {
  const each = Math.floor(size / PARAMS)
  const { values, want } = textPieces(each)
  const list = values.map((_, i) => `$${i + 1}::text`).join(', ')
  const text = `SELECT md5(array_to_string(ARRAY[${list}], '')) AS h`
  const step = (name: string): Step => ({
    name,
    async run() {
      const r = await db.query<{ h: string }>(text, values)
      return () => {
        if (r.rows[0]!.h !== want) throw new Error(`${name}: server digest ${r.rows[0]!.h}, expected ${want}`)
        return { params: PARAMS, bytesEach: each }
      }
    },
  })
  return [step('first'), step('prepared')]
}

const manyBytea = (warm: boolean): CaseSetup => async (db, size) => {
  const each = Math.floor(size / PARAMS)
  const all = randomBytes(each * PARAMS)
  const values = Array.from({ length: PARAMS }, (_, i) => all.subarray(i * each, (i + 1) * each))
  const want = md5(all)
  const list = values.map((_, i) => `$${i + 1}::bytea`).join(', ')
  const text = `SELECT md5(string_agg(x, ''::bytea ORDER BY i)) AS h FROM unnest(ARRAY[${list}]) WITH ORDINALITY AS u(x, i)`
  if (warm) await db.query(text, values.map((_, i) => Buffer.from([i & 255])))
  return [
    {
      name: warm ? 'prepared' : 'first',
      async run() {
        const r = await db.query<{ h: string }>(text, values)
        return () => {
          if (r.rows[0]!.h !== want) throw new Error(`server digest ${r.rows[0]!.h}, expected ${want}`)
          return { params: PARAMS, bytesEach: each }
        }
      },
    },
  ]
}

const CASES: Record<string, CaseSetup> = {
  'bytea-first': byteaRoundTrip(false),
  'bytea-prepared': byteaRoundTrip(true),
  'text-ascii': textRoundTrip(asciiBytes, true),
  // The same bytes either way: one execution is enough for the multi-byte decoding paths.
  'text-utf8': textRoundTrip(utf8Bytes, false),
  table: tableRoundTrip,
  'query-text': queryText,
  'many-text': manyText,
  'many-bytea-first': manyBytea(false),
  'many-bytea-prepared': manyBytea(true),
}

// A function of its own: a suspended async function may keep a finished
// step's result (hundreds of MiB) alive in its frame while the next one runs.
async function measure(step: Step, size: number, baseline: number): Promise<StepReport> {
  await settle()
  resetPeak()
  const t0 = performance.now()
  const check = await step.run()
  const ms = Math.round(performance.now() - t0)
  const peakAbove = peak() - baseline
  const detail = check() ?? undefined
  return { name: step.name, ms, peakAboveBaseline: peakAbove, ratio: Math.round((peakAbove / size) * 100) / 100, detail }
}

async function main(): Promise<number> {
  const [name, sizeArg] = process.argv.slice(2)
  const setup = CASES[name ?? '']
  const size = Number(sizeArg)
  if (!setup || !(size > 0)) {
    console.error(`usage: big-values-child <${Object.keys(CASES).join('|')}> <bytes>`)
    return 2
  }
  const url = process.env.PIPEGRES_BIG_URL
  const sslmode = process.env.PIPEGRES_BIG_SSLMODE as 'disable' | 'require' | undefined
  const db = await connect({ ...(url ? { connectionString: url } : {}), ...(sslmode ? { sslmode } : {}) })
  const report: ChildReport = { case: name!, size, baseline: 0, valuesAboveBaseline: 0, peakReset: true, steps: [], afterwards: 'not reached', phases: {} }
  // Each phase is also written to stderr as it ends, so that a run killed for taking too long shows where it was.
  const phase = (what: string): void => {
    report.phases[what] = Math.round(performance.now())
    process.stderr.write(`phase ${what} at ${report.phases[what]} ms\n`)
  }
  phase('started')
  try {
    await db.query('SELECT 1')
    phase('connected')
    await settle()
    report.baseline = rss()
    const steps = await setup(db, size)
    await settle()
    report.valuesAboveBaseline = rss() - report.baseline
    phase('values made')
    for (const step of steps) {
      report.steps.push(await measure(step, size, report.baseline))
      phase(step.name)
    }
    const r = await db.query<{ ok: number }>('SELECT 1 AS ok')
    report.afterwards = r.rows[0]?.ok === 1 ? 'ok' : `unexpected ${JSON.stringify(r.rows)}`
    phase('afterwards')
  } catch (err) {
    const e = err as Error
    report.error = `${e.name}: ${e.message}`.slice(0, 2000)
  } finally {
    report.peakReset = peakReset
    await db.end().catch(() => {})
    phase('closed')
  }
  console.log(JSON.stringify(report))
  return report.error === undefined && report.afterwards === 'ok' ? 0 : 1
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
