import { ArgumentError } from '../errors.js'
import { SqlLexer } from '../sql/lexer.js'

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
 * WHY; null when there is none. Reads the words of each statement outside
 * quotes, quoted identifiers, dollar quotes and comments.
 */
export function sessionStatement(text: string): string | null {
  const lexer = new SqlLexer(text)
  // The statement's significant tokens: words in lower case, anything else as null.
  let tokens: Array<string | null> = []
  for (let kind = lexer.nextSignificant(); ; kind = lexer.nextSignificant()) {
    if (kind === 'semicolon' || kind === 'end') {
      const found = tokens.length > 0 ? judge(tokens) : null
      if (found !== null || kind === 'end') return found
      tokens = []
    } else tokens.push(kind === 'word' ? lexer.lower() : null)
  }
}

function judge(tokens: ReadonlyArray<string | null>): string | null {
  const [first, second, third] = tokens
  switch (first) {
    case 'listen':
      return 'LISTEN'
    case 'set':
      // SET LOCAL, SET TRANSACTION and SET CONSTRAINTS end with the transaction; SET SESSION ... does not.
      return second === 'local' || second === 'transaction' || second === 'constraints' ? null : 'SET'
    case 'reset':
      return 'RESET'
    case 'prepare':
      return second === 'transaction' ? null : 'PREPARE'
    case 'declare':
      return hasPhrase(tokens, 'with', 'hold') ? 'DECLARE ... WITH HOLD' : null
    case 'create': {
      const kind = second === 'local' || second === 'global' ? third : second
      const temp = kind === 'temp' || kind === 'temporary'
      return temp && !hasPhrase(tokens, 'on', 'commit', 'drop') ? 'CREATE TEMP TABLE' : null
    }
  }
  return null
}

/** Whether `words` follow one another among the statement's tokens. */
function hasPhrase(tokens: ReadonlyArray<string | null>, ...words: string[]): boolean {
  outer: for (let i = 0; i + words.length <= tokens.length; i++) {
    for (let j = 0; j < words.length; j++) if (tokens[i + j] !== words[j]) continue outer
    return true
  }
  return false
}
