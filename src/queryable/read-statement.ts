// Whether a statement only reads, for the coalesce option: a statement the
// scanner cannot prove to be a plain read is never shared with another caller.
// The scanner reads words outside quotes, quoted identifiers, dollar quotes
// and comments, so a column named "update" or a string 'delete' changes
// nothing, while an unquoted keyword anywhere in the statement does.

/** Statements that begin with one of these may be reads. SHOW is not: its answer is the session's. */
const READ_STARTS = new Set(['select', 'values', 'table', 'with'])

/**
 * Words that make a statement more than a read wherever they stand: a
 * data-modifying WITH, SELECT INTO (creates a table), row locks (FOR UPDATE,
 * FOR [KEY] SHARE), and functions that change the session or reach outside
 * the query: settings, advisory locks, notifications, sequences set by hand,
 * large objects, other backends.
 */
const NOT_READ = new Set([
  'insert',
  'update',
  'delete',
  'merge',
  'into',
  'share',
  'set_config',
  'pg_notify',
  'setval',
  'pg_cancel_backend',
  'pg_terminate_backend',
  'pg_reload_conf',
  'pg_rotate_logfile',
  'pg_switch_wal',
  'pg_create_restore_point',
  'dblink_exec',
])

/** Prefixes of function families that change state: advisory locks, large objects, replication slots. */
const NOT_READ_PREFIXES = ['pg_advisory', 'pg_try_advisory', 'lo_', 'pg_create_', 'pg_drop_', 'pg_replication_', 'pg_logical_slot_']

const WORD = /[A-Za-z0-9_$]/
const WORD_START = /[A-Za-z_]/

/**
 * True when `text` is one statement that the scanner sees as a read: it
 * starts with SELECT, VALUES, TABLE or WITH and has none of the words above.
 * Volatile functions (random(), now(), nextval()) do not stop it: a caller
 * that coalesces them opts in to sharing their value.
 */
export function isPlainRead(text: string): boolean {
  let first: string | null = null
  let ended = false
  let pos = 0
  const n = text.length
  while (pos < n) {
    const c = text[pos]!
    if (ended && (c === "'" || c === '"' || c === '$')) return false
    if (c === "'") pos = quoteEnd(text, pos, "'", /[eE]/.test(text[pos - 1] ?? '') && !WORD.test(text[pos - 2] ?? ''))
    else if (c === '"') pos = quoteEnd(text, pos, '"', false)
    else if (c === '$' && !WORD.test(text[pos - 1] ?? '')) pos = dollarEnd(text, pos)
    else if (c === '-' && text[pos + 1] === '-') {
      const nl = text.indexOf('\n', pos)
      pos = nl < 0 ? n : nl + 1
    } else if (c === '/' && text[pos + 1] === '*') pos = commentEnd(text, pos)
    else if (c === ';') {
      ended = true
      pos++
    } else if (WORD_START.test(c) && !WORD.test(text[pos - 1] ?? '')) {
      // A second statement: never a read to share (the extended protocol refuses it anyway).
      if (ended) return false
      const start = pos
      while (pos < n && WORD.test(text[pos]!)) pos++
      const word = text.slice(start, pos).toLowerCase()
      if (first === null) {
        if (!READ_STARTS.has(word)) return false
        first = word
      } else if (NOT_READ.has(word) || NOT_READ_PREFIXES.some((p) => word.startsWith(p))) return false
    } else {
      if (ended && !/\s/.test(c)) return false
      pos++
    }
  }
  return first !== null
}

/** Past a quoted string or identifier: a doubled quote stays inside, and so does a backslashed one in an E'' string (the pooler's statement check uses it too). */
export function quoteEnd(s: string, pos: number, quote: string, backslashes: boolean): number {
  pos++
  while (pos < s.length) {
    const c = s[pos]!
    if (backslashes && c === '\\') pos += 2
    else if (c === quote) {
      if (s[pos + 1] !== quote) return pos + 1
      pos += 2
    } else pos++
  }
  return pos
}

/** Past a dollar-quoted string ($$...$$, $tag$...$tag$), or past a lone $ (a parameter such as $1). */
function dollarEnd(s: string, pos: number): number {
  const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(s.slice(pos, pos + 64))
  if (m === null) return pos + 1
  const close = s.indexOf(m[0], pos + m[0].length)
  return close < 0 ? s.length : close + m[0].length
}

/** Past a block comment; they nest. */
function commentEnd(s: string, pos: number): number {
  let depth = 0
  while (pos < s.length) {
    if (s.startsWith('/*', pos)) {
      depth++
      pos += 2
    } else if (s.startsWith('*/', pos)) {
      pos += 2
      if (--depth === 0) return pos
    } else pos++
  }
  return pos
}
