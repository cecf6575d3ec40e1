import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { repoRoot as root } from '../../support/paths.js'

// The published declarations, as `npm run build` makes them, name exactly the
// public API: every name dist/index.d.ts (the main entry) and
// dist/replication.d.ts (pipegres/replication) export (themselves or through
// what they re-export), and for each exported class its public members. A member that
// is internal (a send(), a hold(), a constructor taking internal types) shows
// up here as a new name, and a public signature that mentions a type the
// package does not export fails the second test.


function buildDeclarations(): string {
  const out = mkdtempSync(join(tmpdir(), 'pipegres-dts-'))
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out, '--declarationDir', out, '--emitDeclarationOnly', '--sourceMap', 'false', '--inlineSources', 'false'], { stdio: 'pipe' })
  return out
}

/** Where a name is declared: a .d.ts file and the name it has there. */
interface Decl {
  readonly file: string
  readonly name: string
}

const key = (d: Decl): string => `${d.file}#${d.name}`

interface Parsed {
  /** Top-level statements, comments removed, each on one string. */
  readonly chunks: string[]
  /** Names declared in this file (exported or not), with the statement that declares them. */
  readonly locals: Map<string, string[]>
  /** Local name -> where it comes from (imports and `export { a as b } from`). */
  readonly imports: Map<string, { from: string; name: string }>
  /** Public name -> local name or origin, from export statements. */
  readonly exports: Map<string, { from: string | null; name: string }>
  readonly star: string[]
}

const stripComments = (s: string): string => s.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')

class Declarations {
  private readonly files = new Map<string, Parsed>()

  constructor(private readonly dir: string) {}

  target(from: string, spec: string): string {
    return resolve(dirname(from), spec.replace(/\.js$/, '.d.ts'))
  }

  parse(file: string): Parsed {
    const known = this.files.get(file)
    if (known !== undefined) return known
    const text = stripComments(readFileSync(file, 'utf8'))
    const chunks: string[] = []
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue
      if (/^[\s}\])]/.test(line) && chunks.length > 0) chunks[chunks.length - 1] += '\n' + line
      else chunks.push(line)
    }
    const p: Parsed = { chunks, locals: new Map(), imports: new Map(), exports: new Map(), star: [] }
    for (const c of chunks) {
      let m: RegExpMatchArray | null
      if ((m = c.match(/^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/)) !== null) {
        for (const [local, name] of specifiers(m[1]!)) p.imports.set(local, { from: this.target(file, m[2]!), name })
      } else if ((m = c.match(/^export\s+(?:type\s+)?\*\s+from\s+'([^']+)'/)) !== null) {
        p.star.push(this.target(file, m[1]!))
      } else if ((m = c.match(/^export\s+(?:type\s+)?\{([^}]*)\}(?:\s+from\s+'([^']+)')?/)) !== null) {
        const from = m[2] === undefined ? null : this.target(file, m[2])
        for (const [pub, name] of specifiers(m[1]!)) p.exports.set(pub, { from, name })
      } else if ((m = c.match(/^(export\s+)?(?:declare\s+)?(?:abstract\s+)?(?:class|interface|type|function|const|let|enum|namespace)\s+([A-Za-z_$][\w$]*)/)) !== null) {
        const list = p.locals.get(m[2]!) ?? []
        list.push(c)
        p.locals.set(m[2]!, list)
        if (m[1] !== undefined) p.exports.set(m[2]!, { from: null, name: m[2]! })
      }
    }
    this.files.set(file, p)
    return p
  }

  /** Where `name`, as seen in `file`, is declared; null for globals and type parameters. */
  resolve(file: string, name: string, seen = new Set<string>()): Decl | null {
    const k = `${file}#${name}`
    if (seen.has(k) || !existsSync(file)) return null
    seen.add(k)
    const p = this.parse(file)
    if (p.locals.has(name)) return { file, name }
    const imp = p.imports.get(name)
    if (imp !== undefined) return this.resolve(imp.from, imp.name, seen)
    const exp = p.exports.get(name)
    if (exp !== undefined) return this.resolve(exp.from ?? file, exp.name, seen)
    for (const s of p.star) {
      const d = this.resolve(s, name, seen)
      if (d !== null) return d
    }
    return null
  }

  /** Every public name of a module and where it is declared. */
  exportsOf(file: string): Map<string, Decl> {
    const p = this.parse(file)
    const out = new Map<string, Decl>()
    for (const s of p.star) for (const [n, d] of this.exportsOf(s)) out.set(n, d)
    for (const [pub, e] of p.exports) {
      const d = e.from === null ? this.resolve(file, e.name) : this.resolve(e.from, e.name)
      if (d !== null) out.set(pub, d)
    }
    return out
  }

  statements(d: Decl): string[] {
    return this.parse(d.file).locals.get(d.name) ?? []
  }

  rel(file: string): string {
    return relative(this.dir, file)
  }
}

function specifiers(list: string): [string, string][] {
  return list
    .split(',')
    .map((s) => s.trim().replace(/^type\s+/, ''))
    .filter((s) => s !== '')
    .map((s) => {
      const [name, alias] = s.split(/\s+as\s+/)
      return [alias ?? name!, name!]
    })
}

const classHead = /^export\s+declare\s+(?:abstract\s+)?class\s/

/** The public members of a class statement (own members; `extends X` is listed as such), each with its text. */
function publicMembers(statement: string): Map<string, string> {
  const lines = statement.split('\n')
  const members = new Map<string, string>()
  const head = lines[0]!.match(/\bextends\s+([A-Za-z_$][\w$.]*)/)
  if (head !== null) members.set(`extends ${head[1]}`, lines[0]!)
  let current: string | null = null
  for (const line of lines.slice(1)) {
    if (!line.startsWith('    ') || line.startsWith('     ')) {
      if (current !== null && line.startsWith('     ')) members.set(current, members.get(current)! + '\n' + line)
      continue
    }
    const text = line.slice(4)
    current = null
    if (/^(static\s+)?(private|protected)\b/.test(text) || text.startsWith('#')) continue
    const m = text.match(/^(static\s+)?(?:(?:abstract|readonly)\s+)*(?:(?:get|set)\s+)?([A-Za-z_$][\w$]*|\[[^\]]+\])/)
    if (m === null) continue
    current = `${m[1] !== undefined ? 'static ' : ''}${m[2]}`
    members.set(current, (members.get(current) ?? '') + '\n' + text)
  }
  return members
}

/** Every name the main entry exports, types included: at most 120 (what every user pays for in the API). */
const expectedNames = [
  'AbortError', 'AcquireTrace', 'ArgumentError', 'AuthError', 'AuthMethodName', 'BatchBuilder',
  'BatchOptions', 'BatchQueryOptions', 'ByteStream', 'ChannelBinding', 'Client', 'ClientErrorCode',
  'ClientEvents', 'ClientOptions', 'CodecError', 'Columns', 'ColumnValues', 'ConfigError', 'connect',
  'ConnectionConfig', 'ConnectionError', 'ConnectOptions', 'ConnectTrace', 'CopyFormat', 'CopyFormatOptions',
  'CopyFromRowsOptions', 'CopyInStream', 'CopyOptions', 'CopyOutStream', 'CopyResult', 'CopyRow',
  'CopyRowError', 'CopyRowSource', 'CopyToRowsOptions', 'createPool', 'Cursor', 'CursorOptions',
  'CustomType', 'DescribeOptions', 'Description', 'Field', 'FieldDescription', 'Fragment', 'fragment',
  'HostAddress', 'HostChange', 'HostInfo', 'HostRole', 'Identifier', 'identifier', 'Interval', 'isLazyRow',
  'LazyRow', 'Listener', 'Lsn', 'Money', 'Notification', 'NotificationHandler', 'NullBitmaps',
  'ParameterError', 'PasswordSource', 'PgError', 'PgErrorFields', 'PgNotice', 'PipegresError', 'plainRow',
  'Pool', 'PoolEvents', 'PoolHooks', 'PoolOptions', 'PoolSettings', 'ProtocolError', 'ProtocolVersion',
  'Queryable', 'QueryDefaultOptions', 'QueryOptions', 'QueryRowMode', 'QuerySettingOptions', 'QueryTiming',
  'QueryTrace', 'quoteIdentifier', 'Range', 'RangeBounds', 'RawDestination', 'RawOptions', 'RawResult',
  'ReplicationLag', 'RequireAuth', 'ReservedClient', 'Result', 'ResultLimitError', 'RouteOptions', 'Row',
  'RowMode', 'RowQueryOptions', 'RowStream', 'SimpleQueryOptions', 'SqlState', 'SqlStateCode', 'SslMode',
  'SslNegotiation', 'StartedTransaction', 'StartTlsOptions', 'StartTransactionOptions', 'StreamFactory',
  'StreamOptions', 'StreamTarget', 'TargetSessionAttrs', 'TimeoutError', 'TracingOptions', 'Transaction',
  'TransactionError', 'TransactionOptions', 'TransactionRetry', 'TransactionState', 'TransactionStatus',
  'typed', 'TypedValue', 'TypeOptions',
]

/** The public members of each exported class (own members; the base class as `extends X`). */
const expectedClasses: Record<string, string[]> = {
  AbortError: ['constructor', 'extends PipegresError', 'name', 'reason'],
  ArgumentError: ['constructor', 'extends PipegresError', 'name'],
  AuthError: ['constructor', 'extends PipegresError', 'method', 'name'],
  Client: [
    '[Symbol.asyncDispose]', 'begin', 'cancelMisfires', 'closed', 'config', 'connect', 'connected', 'constructor',
    'destroy', 'end', 'extends Queryable', 'listen', 'notify', 'off', 'on', 'once',
    'pendingQueries', 'processId', 'protocolVersion', 'registerType',
    'serverParameters', 'startTransaction', 'tls', 'transactionStatus',
  ],
  CodecError: ['extends Error', 'name'],
  ConfigError: ['constructor', 'extends PipegresError', 'name', 'setting'],
  ConnectionError: ['constructor', 'extends PipegresError', 'mayHaveRun', 'name'],
  CopyInStream: [
    '[Symbol.asyncDispose]', '_destroy', '_final', '_write', '_writev', 'extends Writable', 'result', 'rowCount',
  ],
  CopyOutStream: ['[Symbol.asyncDispose]', '_destroy', '_read', 'extends Readable', 'format', 'result', 'rowCount'],
  CopyRowError: ['column', 'constructor', 'extends PipegresError', 'name', 'row'],
  Cursor: [
    '[Symbol.asyncDispose]', '[Symbol.asyncIterator]', 'batchSize', 'close', 'command', 'fields', 'read',
    'rowCount',
  ],
  Fragment: ['constructor', 'strings', 'values'],
  Identifier: ['constructor', 'quoted'],
  Interval: ['constructor', 'days', 'microseconds', 'months', 'toJSON', 'toString'],
  Lsn: [
    'equals', 'plus', 'static ZERO', 'static compare', 'static from', 'static max', 'toJSON',
    'toString', 'value', 'valueOf',
  ],
  Money: ['constructor', 'minorUnits', 'toJSON', 'toString'],
  ParameterError: ['constructor', 'extends PipegresError', 'index', 'name'],
  PgError: ['batchIndex', 'constructor', 'extends Error', 'merges PgErrorFields', 'name', 'query'],
  PipegresError: ['code', 'constructor', 'extends Error', 'name'],
  Pool: [
    '[Symbol.asyncDispose]', 'begin', 'config', 'constructor', 'destroy', 'discover', 'end', 'extends Queryable', 'hosts', 'idleCount',
    'listen', 'max', 'notify', 'off', 'on', 'options', 'registerType', 'reserve', 'reservedCount',
    'startTransaction', 'totalCount', 'waitingCount', 'writeLsn',
  ],
  ProtocolError: ['constructor', 'extends PipegresError', 'name'],
  Queryable: [
    'batch', 'copyFrom', 'copyFromRows', 'copyTo', 'copyToRows', 'cursor', 'describe', 'query', 'queryRaw',
    'simpleQuery', 'sql', 'stream',
  ],
  Range: [
    'constructor', 'empty', 'lower', 'lowerInclusive', 'static empty', 'toString', 'upper',
    'upperInclusive',
  ],
  ReservedClient: ['[Symbol.asyncDispose]', 'begin', 'extends Queryable', 'processId', 'release', 'startTransaction'],
  ResultLimitError: ['constructor', 'extends PipegresError', 'limit', 'max', 'name', 'reached'],
  RowStream: [
    '[Symbol.asyncDispose]', '[Symbol.asyncIterator]', 'command', 'fields', 'next', 'return', 'rowCount',
    'throw',
  ],
  StartedTransaction: ['[Symbol.asyncDispose]', 'commit', 'extends Transaction', 'rollback', 'savepoint', 'state'],
  TimeoutError: ['constructor', 'extends PipegresError', 'name', 'timeout'],
  Transaction: ['attempt', 'extends Queryable', 'savepoint'],
  TransactionError: ['extends PipegresError', 'name'],
  TypedValue: ['constructor', 'oid', 'typeName', 'value'],
}

/** Every name pipegres/replication exports. */
const expectedReplicationNames = [
  'BeginMessage', 'BeginPrepareMessage', 'ChangeMessage', 'ChangeMessageBase', 'ChangeRow', 'CommitMessage',
  'CommitPreparedMessage', 'connectReplication', 'CreatedSlot', 'CreateSlotOptions', 'DeleteMessage',
  'InsertMessage', 'LogicalMessage', 'Lsn', 'OriginMessage', 'PrepareMessage', 'ReadSlot', 'Relation',
  'RelationColumn', 'RelationMessage', 'replicate', 'ReplicateOptions', 'ReplicationConnection',
  'ReplicationError', 'ReplicationFailure', 'ReplicationSource', 'ReplicationStream',
  'ReplicationStreamEvents', 'ReplicationStreamOptions', 'RollbackPreparedMessage', 'StreamAbortMessage',
  'StreamCommitMessage', 'StreamStartMessage', 'StreamStopMessage', 'subscribe', 'SubscribeOptions',
  'Subscription', 'SystemIdentity', 'TruncateMessage', 'TypeMessage', 'UnchangedToast', 'unchangedToast',
  'UpdateMessage', 'WalMessage', 'WalMessageBase', 'WalStream',
]

/** The public members of each class pipegres/replication exports (Lsn is the main entry's own). */
const expectedReplicationClasses: Record<string, string[]> = {
  Lsn: [
    'equals', 'plus', 'static ZERO', 'static compare', 'static from', 'static max', 'toJSON',
    'toString', 'value', 'valueOf',
  ],
  ReplicationConnection: [
    '[Symbol.asyncDispose]', 'close', 'closed', 'command', 'createSlot', 'dropSlot', 'end', 'identifySystem', 'mode',
    'processId', 'readSlot', 'serverMajor', 'serverVersion', 'timelineHistory',
  ],
  ReplicationError: ['constructor', 'extends PipegresError', 'name', 'reason'],
  ReplicationStream: [
    '[Symbol.asyncDispose]', '[Symbol.asyncIterator]', 'acknowledgedLsn', 'buffered', 'close', 'next', 'off', 'on',
    'processId', 'ready', 'return',
  ],
}

/** Types named in public signatures that are not exported: none may be left. */
const knownLeaks = new Set<string>([])

const dir = buildDeclarations()
const dts = new Declarations(dir)
const exported = dts.exportsOf(join(dir, 'index.d.ts'))
const replicationExported = dts.exportsOf(join(dir, 'replication.d.ts'))
/** Every name of every entry checked here, with where it is declared. */
const allExported = [...exported, ...replicationExported]

/** The sorted names of an entry's exports, and the sorted public members of each class among them. */
function apiOf(exported: Map<string, Decl>): { names: string[]; classes: Record<string, string[]> } {
  const names = [...exported.keys()].sort()
  const classes: Record<string, string[]> = {}
  for (const name of names) {
    const statements = dts.statements(exported.get(name)!)
    const cls = statements.find((s) => classHead.test(s))
    if (cls === undefined) continue
    const members = [...publicMembers(cls).keys()]
    // Members an interface merged into the class declares (PgError's fields are PgErrorFields').
    for (const s of statements) {
      const merged = s.match(/^export\s+interface\s+[\w$]+\s+extends\s+([^{]+)\{/)
      if (merged !== null) members.push(`merges ${merged[1]!.trim()}`)
    }
    classes[name] = members.sort()
  }
  return { names, classes }
}

test('the main entry exports exactly its public API, and each class exactly its public members', () => {
  const { names, classes } = apiOf(exported)
  // PIPEGRES_API_OUT=file writes the API as built, to review and copy below when it changes on purpose.
  if (process.env.PIPEGRES_API_OUT !== undefined) writeFileSync(process.env.PIPEGRES_API_OUT, JSON.stringify({ names, classes }, null, 2) + '\n')
  assert.deepEqual(names, [...expectedNames].sort(), 'exported names')
  assert.deepEqual(classes, expectedClasses, 'public members of the exported classes')
  assert.ok(names.length <= 120, `the main entry exports ${names.length} names: at most 120, the rest belongs in a subpath`)
})

test('pipegres/replication exports exactly its public API, and each class exactly its public members', () => {
  const { names, classes } = apiOf(replicationExported)
  assert.deepEqual(names, [...expectedReplicationNames].sort(), 'exported names')
  assert.deepEqual(classes, expectedReplicationClasses, 'public members of the exported classes')
  // The one class both entries export is one declaration: an Lsn from pool.writeLsn() is a replication message's Lsn.
  assert.deepEqual(replicationExported.get('Lsn'), exported.get('Lsn'))
})

test('no exported class shows a protected member, and none made by the library alone has a public constructor', () => {
  // A protected member in the declarations is an invitation to subclass, and names the insides it
  // works with; a class that only the library can make usefully (a cursor needs its query, a
  // transaction its connection) declares a private constructor, or TypeScript offers an implicit public one.
  const protectedMembers: string[] = []
  const implicitConstructor: string[] = []
  for (const [name, d] of new Map(allExported)) {
    const cls = dts.statements(d).find((s) => classHead.test(s))
    if (cls === undefined) continue
    // A protected constructor is left to Transaction, which StartedTransaction extends.
    for (const line of cls.split('\n').slice(1)) if (/^ {4}(static\s+)?protected\b/.test(line) && !(name === 'Transaction' && /^ {4}protected constructor\(/.test(line))) protectedMembers.push(`${name}: ${line.trim()}`)
    if (!/^export\s+declare\s+abstract\s/.test(cls) && !/^ {4}(private |protected )?constructor\(/m.test(cls)) implicitConstructor.push(name)
  }
  assert.deepEqual(protectedMembers, [])
  // Errors users may make themselves, and ReplicationStream (made by subscribe() and replicate(); see its constructor).
  assert.deepEqual(implicitConstructor.sort(), ['CodecError', 'ReplicationStream', 'TransactionError'])
})

test('every type named in a public signature is exported from the package', () => {
  // From either entry: pipegres/replication's subscribe() takes the main entry's Client.
  const public_ = new Set(allExported.map(([, d]) => key(d)))
  const leaks: string[] = []
  for (const [name, d] of allExported) {
    for (const statement of dts.statements(d)) {
      const parts = classHead.test(statement) ? [...publicMembers(statement)].map(([m, text]) => [`${name}.${m}`, text] as const) : [[name, statement] as const]
      for (const [where, text] of parts) {
        const code = text.replace(/'[^']*'|"[^"]*"|`[^`]*`/g, '')
        const refs = new Set<string>()
        for (const m of code.matchAll(/import\("([^"]+)"\)\.([\w$]+)/g)) refs.add(key(dts.resolve(dts.target(d.file, m[1]!), m[2]!) ?? { file: '', name: '' }))
        for (const m of code.matchAll(/(?<![.\w$])([A-Za-z_$][\w$]*)/g)) {
          const r = dts.resolve(d.file, m[1]!)
          if (r !== null) refs.add(key(r))
        }
        for (const r of refs) {
          if (r === '#' || public_.has(r)) continue
          const [file, type] = r.split('#')
          const leak = `${where} names ${type} (${dts.rel(file!)})`
          if (!knownLeaks.has(leak)) leaks.push(`${leak}, which the package does not export`)
        }
      }
    }
  }
  assert.deepEqual(leaks, [])
})

after(() => rmSync(dir, { recursive: true, force: true }))

