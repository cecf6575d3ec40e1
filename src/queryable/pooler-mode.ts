import { ArgumentError } from '../errors.js'
import { quoteEnd } from './read-statement.js'

// A transaction-mode pooler (PgBouncer's pool_mode=transaction) hands each
// transaction to whichever server connection is free. What a statement leaves
// on the server session (a setting, a LISTEN, a holdable cursor, a prepared
// statement, a temporary table) stays behind on that server connection, where
// the next client to get it inherits it, while this client's later queries run
// elsewhere without it. The server cannot tell, so nothing fails: the
// application just misbehaves. With `pooler: 'transaction'` such statements are
// refused before they are sent.

/** What each refused statement would do wrong, by the name the error gives it. */
const WHY: Readonly<Record<string, string>> = {
  LISTEN: 'its notifications would go to whichever client gets that server connection next; listen on a direct connection or through a session-mode pooler',
  SET: 'the setting would stay on one server connection, for whichever client gets it next, and miss this client\'s later queries; use SET LOCAL inside a transaction, or set it on the role or database',
  RESET: 'it would reset one server connection only, not the one this client\'s later queries run on',
  'DECLARE ... WITH HOLD': 'the cursor would stay on one server connection, and a later FETCH may run on another; use cursor() or stream(), or a cursor without WITH HOLD inside a transaction',
  PREPARE: 'the statement would exist on one server connection only; pipegres prepares statements itself (the prepare option)',
  'CREATE TEMP TABLE': 'the table would stay on one server connection only; create it with ON COMMIT DROP inside a transaction',
}

/** The error for a statement, or for listen(), that a transaction-mode pooler cannot keep. */
export function poolerRefusal(what: string): ArgumentError {
  return new ArgumentError(`${what} cannot work through a transaction-mode pooler (pooler: 'transaction'): ${WHY[what]}`)
}

/** Throws poolerRefusal() when any statement of `text` sets state on the server session. */
export function refuseSessionState(text: string): void {
  const found = sessionStatement(text)
  if (found !== null) throw poolerRefusal(found)
}

/**
 * The first statement of `text` (one statement, or several separated by
 * semicolons) that would leave state on the server session, by its name in
 * WHY; null when there is none. Reads only leading keywords, skipping
 * comments, and finds statement ends outside quotes, quoted identifiers,
 * dollar quotes and comments.
 */
export function sessionStatement(text: string): string | null {
  let pos = 0
  while (pos < text.length) {
    pos = skipSpace(text, pos)
    const end = statementEnd(text, pos)
    const found = judge(text.slice(pos, end))
    if (found !== null) return found
    pos = end + 1
  }
  return null
}

function judge(stmt: string): string | null {
  const words = leadingWords(stmt, 4)
  switch (words[0]) {
    case 'listen':
      return 'LISTEN'
    case 'set':
      // SET LOCAL, SET TRANSACTION and SET CONSTRAINTS end with the transaction; SET SESSION ... does not.
      return words[1] === 'local' || words[1] === 'transaction' || words[1] === 'constraints' ? null : 'SET'
    case 'reset':
      return 'RESET'
    case 'prepare':
      return words[1] === 'transaction' ? null : 'PREPARE'
    case 'declare':
      return /\bwith\s+hold\b/i.test(stmt) ? 'DECLARE ... WITH HOLD' : null
    case 'create': {
      const i = words[1] === 'local' || words[1] === 'global' ? 2 : 1
      const temp = words[i] === 'temp' || words[i] === 'temporary'
      return temp && !/\bon\s+commit\s+drop\b/i.test(stmt) ? 'CREATE TEMP TABLE' : null
    }
  }
  return null
}

/** Up to `n` leading words of a statement, lower-cased, skipping comments between them. */
function leadingWords(stmt: string, n: number): string[] {
  const words: string[] = []
  let pos = 0
  while (words.length < n) {
    pos = skipSpace(stmt, pos)
    const start = pos
    while (pos < stmt.length && /[A-Za-z_]/.test(stmt[pos]!)) pos++
    if (pos === start) break
    words.push(stmt.slice(start, pos).toLowerCase())
  }
  return words
}

/** Past whitespace and comments (line comments, and block comments, which nest). */
function skipSpace(s: string, pos: number): number {
  for (;;) {
    while (pos < s.length && /\s/.test(s[pos]!)) pos++
    if (s.startsWith('--', pos)) {
      const nl = s.indexOf('\n', pos)
      pos = nl < 0 ? s.length : nl + 1
    } else if (s.startsWith('/*', pos)) pos = commentEnd(s, pos)
    else return pos
  }
}

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

/** The index of the semicolon ending the statement that starts at `pos` (or the text's length). */
function statementEnd(s: string, pos: number): number {
  while (pos < s.length) {
    const c = s[pos]!
    if (c === ';') return pos
    if (c === "'") pos = quoteEnd(s, pos, "'", /[eE]/.test(s[pos - 1] ?? '') && !/[A-Za-z0-9_]/.test(s[pos - 2] ?? ''))
    else if (c === '"') pos = quoteEnd(s, pos, '"', false)
    else if (c === '$') pos = dollarEnd(s, pos)
    else if (s.startsWith('--', pos) || s.startsWith('/*', pos)) pos = skipSpace(s, pos)
    else pos++
  }
  return s.length
}

/** Past a dollar-quoted string ($$...$$, $tag$...$tag$), or past a lone $ (a parameter such as $1). */
function dollarEnd(s: string, pos: number): number {
  // Inside an identifier (a$b) a dollar sign quotes nothing.
  if (/[A-Za-z0-9_]/.test(s[pos - 1] ?? '')) return pos + 1
  const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(s.slice(pos, pos + 64))
  if (m === null) return pos + 1
  const close = s.indexOf(m[0], pos + m[0].length)
  return close < 0 ? s.length : close + m[0].length
}
