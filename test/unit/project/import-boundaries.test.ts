import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, dirname, resolve, sep } from 'node:path'
import { repoRoot as root } from '../../support/paths.js'

// The layering of src/ (see the design notes): each layer may import only the
// layers listed for it, and only the listed node: modules. A forbidden edge is
// a failure naming the file and the import.

const src = join(root, 'src')

type Layer = 'errors' | 'sql' | 'protocol' | 'auth' | 'config' | 'connection' | 'types' | 'copy' | 'query' | 'replication' | 'trace' | 'queryable' | 'lane' | 'walsender' | 'pool' | 'face' | 'wire' | 'integrations'

const allowedLayers: Record<Layer, Layer[]> = {
  errors: [],
  // The SQL lexer: statement text into tokens, for every place that reads SQL; imports nothing.
  sql: [],
  protocol: ['errors'],
  auth: ['errors', 'protocol'],
  config: ['errors'],
  connection: ['errors', 'protocol', 'auth', 'config'],
  types: ['errors', 'protocol'],
  // COPY data formats: pure encoding and decoding over the type system.
  copy: ['errors', 'protocol', 'types'],
  query: ['errors', 'protocol', 'connection', 'types', 'config', 'wire', 'copy'],
  // Logical replication messages (pgoutput): pure decoding over the type system (LSNs are a type: types/lsn.ts).
  replication: ['errors', 'protocol', 'types'],
  // The calls every query runner offers: argument and option checks, batches, COPY streams, transactions, tracing.
  // Tracing through diagnostics_channel: the events' contexts, filled in by whichever layer learns each field.
  trace: ['errors', 'sql', 'config', 'connection'],
  queryable: ['errors', 'sql', 'trace', 'protocol', 'config', 'connection', 'types', 'copy', 'query', 'wire'],
  // One server connection's life under a client, a pool slot or a replication connection.
  lane: ['errors', 'trace', 'protocol', 'config', 'connection', 'types', 'query'],
  // Replication connections and their streams, over a lane.
  walsender: ['errors', 'trace', 'protocol', 'config', 'connection', 'types', 'replication', 'queryable', 'lane'],
  // Many lanes: routing, hosts and roles, hooks, the waiting queue, reservations. No replication:
  // pipegres/replication's subscribe(pool) reads the pool's settings through lane/internals.ts.
  pool: ['errors', 'trace', 'protocol', 'config', 'connection', 'types', 'queryable', 'lane'],
  // The top of src/: the package entries (index.ts, replication.ts), their export lists and client.ts;
  // workerd/ holds the entries for Cloudflare Workers (the main one, pipegres/replication's, pipegres/cloudflare).
  face: ['errors', 'sql', 'trace', 'protocol', 'auth', 'config', 'connection', 'types', 'copy', 'query', 'replication', 'queryable', 'lane', 'walsender', 'pool', 'face', 'wire'],
  // The browser-side parser (pipegres/wire) must load in a browser: it shares only
  // the layers that import no node: module (checked by a build against the DOM library).
  wire: ['errors', 'protocol', 'types'],
  // Subpath adapters (pipegres/pg, /kysely, ...): the public API only, checked separately below.
  integrations: [],
}

const allowedNode: Record<Layer, RegExp> = {
  errors: /^$/,
  sql: /^$/,
  protocol: /^$/,
  types: /^$/,
  copy: /^$/,
  auth: /^node:crypto$/,
  config: /^node:(fs|fs\/promises|os|path|net|tls|module)$/,
  connection: /^node:(net|tls|fs|os|path|events|crypto)$/,
  query: /^$/,
  replication: /^$/,
  trace: /^node:diagnostics_channel$/,
  // diagnostics_channel: tracing channels (present in Node, Bun and Deno).
  queryable: /^node:stream$/,
  lane: /^node:events$/,
  walsender: /^node:(events|stream)$/,
  pool: /^node:events$/,
  face: /^node:(events|stream)$/,
  wire: /^$/,
  // fs/promises: pipegres/postgres's sql.file() reads a query from a file, as postgres.js's does.
  integrations: /^node:(events|stream|diagnostics_channel|async_hooks|util|fs\/promises)$/,
}

// The only packages an integration may import, each an optional peer dependency of its own subpath.
const integrationPackages = /^(kysely|drizzle-orm(\/.*)?|@prisma\/driver-adapter-utils|@opentelemetry\/api)$/
const publicEntry = join(src, 'index.ts')
// pipegres/replication's Node entry is public too: pipegres/postgres's sql.subscribe() streams
// through its subscribe() (imported when first called, so that an application that never
// subscribes loads no walsender), as an application would.
const replicationEntry = join(src, 'replication.ts')

/** An integration reaches pipegres through its public entries only, or through files of its own subpath. */
function integrationEdge(file: string, target: string): string | undefined {
  if (target === publicEntry || target === replicationEntry) return undefined
  const own = join(src, 'integrations', relative(join(src, 'integrations'), file).split(sep)[0]!)
  return target.startsWith(own + sep) ? undefined : 'integrations reach pipegres through src/index.ts and src/replication.ts only'
}

function layerOf(file: string): Layer {
  const rel = relative(src, file).split(sep)
  if (rel.length === 1) return rel[0] === 'errors.ts' ? 'errors' : 'face'
  // The Workers entries are entries like the others, in a folder of their own.
  if (rel[0] === 'workerd') return 'face'
  const dir = rel[0] as Layer
  if (!(dir in allowedLayers)) throw new Error(`unknown layer directory src/${dir}: add it to the import rules`)
  return dir
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const out: string[] = []
  for (const m of text.matchAll(importPattern)) out.push((m[1] ?? m[2])!)
  return out
}

test('every import under src/ respects the layering', () => {
  const violations: string[] = []
  const all = files(src)
  assert.ok(all.length > 20, 'the sources were found')
  for (const file of all) {
    const from = layerOf(file)
    for (const spec of importsOf(file)) {
      const where = `${relative(root, file)} imports '${spec}'`
      if (spec.startsWith('node:')) {
        if (!allowedNode[from].test(spec)) violations.push(`${where}: ${from}/ may not use ${spec}`)
        continue
      }
      if (!spec.startsWith('.')) {
        if (from === 'integrations' && integrationPackages.test(spec)) continue
        violations.push(`${where}: no runtime dependencies, and node built-ins need the node: prefix`)
        continue
      }
      const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'))
      if (!target.startsWith(src + sep)) {
        violations.push(`${where}: outside src/`)
        continue
      }
      if (from === 'integrations') {
        const problem = integrationEdge(file, target)
        if (problem) violations.push(`${where}: ${problem}`)
        continue
      }
      const to = layerOf(target)
      if (to === 'integrations') {
        violations.push(`${where}: the core never loads an integration`)
        continue
      }
      if (to !== from && !allowedLayers[from].includes(to)) violations.push(`${where}: ${from}/ may not import ${to}/`)
    }
  }
  assert.deepEqual(violations, [])
})

// Within a layer, files that must not reach into one another: each facade
// reaches connections through the lane, never through another facade; the
// routing policy and the backoff rules are pure; the sinks depend on the
// contract of the exchange they serve (row-sink.ts), never on the exchange
// itself or on each other, and the exchange knows only the default sink.
const forbiddenFiles: Record<string, readonly string[]> = {
  'client.ts': ['pool/pool.ts', 'pool/reserved-client.ts', 'pool/routing.ts', 'queryable/lane-queryable.ts'],
  'pool/reserved-client.ts': ['client.ts', 'pool/pool.ts', 'lane/lane.ts#runtime'],
  'pool/routing.ts': ['*#runtime'],
  'lane/lane.ts': ['queryable/transaction.ts'],
  'lane/backoff.ts': ['lane/lane.ts'],
  'query/extended-request.ts': ['query/consumer-sinks.ts', 'query/raw-sink.ts', 'query/describe-sink.ts', 'query/shared-read.ts', 'query/batch-statement.ts'],
  'query/exchange.ts': ['query/extended-request.ts'],
  'query/row-sink.ts': ['query/extended-request.ts'],
  'query/binder.ts': ['query/extended-request.ts', 'query/session.ts', 'query/statement-cache.ts'],
  'query/collect-sink.ts': ['query/extended-request.ts', 'query/consumer-sinks.ts', 'query/raw-sink.ts', 'query/describe-sink.ts', 'query/shared-read.ts'],
  'query/consumer-sinks.ts': ['query/extended-request.ts', 'query/collect-sink.ts', 'query/raw-sink.ts', 'query/describe-sink.ts'],
  'query/raw-sink.ts': ['query/extended-request.ts', 'query/collect-sink.ts', 'query/consumer-sinks.ts', 'query/describe-sink.ts', 'query/raw.ts#runtime'],
  'query/describe-sink.ts': ['query/extended-request.ts', 'query/collect-sink.ts', 'query/consumer-sinks.ts', 'query/raw-sink.ts'],
}

/** `file#runtime` forbids only value imports of file (`import type` stays allowed); `*#runtime`, of any file. */
function fileRuleBroken(rules: readonly string[], target: string, typeOnly: boolean): boolean {
  return rules.some((r) => r === target || (!typeOnly && (r === `${target}#runtime` || r === '*#runtime')))
}

const typeOnlyPattern = /(?:^|\n)\s*(?:import|export)\s+type\s/

test('files within a layer keep out of one another where the design says so', () => {
  const violations: string[] = []
  for (const [from, rules] of Object.entries(forbiddenFiles)) {
    const file = join(src, from)
    assert.ok(statSync(file).isFile(), `src/${from} exists`)
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(importPattern)) {
      const spec = (m[1] ?? m[2])!
      if (!spec.startsWith('.')) continue
      const target = relative(src, resolve(dirname(file), spec.replace(/\.js$/, '.ts'))).split(sep).join('/')
      if (fileRuleBroken(rules, target, typeOnlyPattern.test(m[0]))) violations.push(`src/${from} imports ${target}`)
    }
  }
  assert.deepEqual(violations, [])
  assert.ok(fileRuleBroken(['pool/pool.ts'], 'pool/pool.ts', true) && fileRuleBroken(['*#runtime'], 'x.ts', false) && !fileRuleBroken(['*#runtime'], 'x.ts', true))
})

test('the rule checker itself catches a forbidden edge', () => {
  // Guards against a pattern that silently matches nothing.
  const sample = "import { Client } from '../client.js'\nimport type { X } from './x.js'\nexport * from './y.js'\nconst m = await import('./z.js')"
  const found = [...sample.matchAll(importPattern)].map((m) => m[1] ?? m[2])
  assert.deepEqual(found, ['../client.js', './x.js', './y.js', './z.js'])
  assert.equal(allowedLayers.connection.includes('types'), false)
  assert.equal(allowedLayers.connection.includes('query'), false)
})

/** Every circle of imports among the given files (type-only imports count: they tie the files as much for a reader). */
export function findCircles(graph: Map<string, string[]>): string[][] {
  const circles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (node: string) => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next)
      if (s === 'open') circles.push(stack.slice(stack.indexOf(next)))
      else if (s === undefined) visit(next)
    }
    stack.pop()
    state.set(node, 'done')
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node)
  return circles
}

test('no file under src/ imports itself through others, type-only imports included', () => {
  const graph = new Map<string, string[]>()
  for (const file of files(src)) {
    const targets = importsOf(file)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => relative(src, resolve(dirname(file), spec.replace(/\.js$/, '.ts'))).split(sep).join('/'))
    graph.set(relative(src, file).split(sep).join('/'), targets)
  }
  assert.deepEqual(findCircles(graph).map((c) => c.join(' -> ')), [])
  // The finder itself: a circle of three and one of two, and a plain chain beside them.
  const sample = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['e']],
    ['e', ['d', 'f']],
    ['f', []],
  ])
  assert.deepEqual(findCircles(sample), [['a', 'b', 'c'], ['d', 'e']])
})
