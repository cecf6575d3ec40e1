import { SqlLexer } from '../sql/lexer.js'

// Whether a statement only reads, for the coalesce option: a statement the
// lexer cannot prove to be a plain read is never shared with another caller.
// The lexer reads words outside quotes, quoted identifiers, dollar quotes
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

/**
 * True when `text` is one statement that the lexer sees as a read: it
 * starts with SELECT, VALUES, TABLE or WITH and has none of the words above.
 * Volatile functions (random(), now(), nextval()) do not stop it: a caller
 * that coalesces them opts in to sharing their value.
 */
export function isPlainRead(text: string): boolean {
  const lexer = new SqlLexer(text)
  let first: string | null = null
  let ended = false
  for (let kind = lexer.nextSignificant(); kind !== 'end'; kind = lexer.nextSignificant()) {
    if (kind === 'semicolon') ended = true
    // A second statement: never a read to share (the extended protocol refuses it anyway).
    else if (ended) return false
    else if (kind === 'word') {
      const word = lexer.lower()
      if (first === null) {
        if (!READ_STARTS.has(word)) return false
        first = word
      } else if (NOT_READ.has(word) || NOT_READ_PREFIXES.some((p) => word.startsWith(p))) return false
    }
  }
  return first !== null
}
