// One SQL lexer for every place that reads statement text: what the pooler
// check refuses, whether a statement is a plain read that may be coalesced,
// and the operation name a trace reports. Each needs only to tell words from
// what is quoted or commented out, and where statements end, so the lexer
// finds token boundaries as PostgreSQL's scanner does (quotes, E'' strings,
// dollar quotes, nested block comments, semicolons) without parsing anything.
// It allocates nothing per token: the caller reads `kind`, `start` and `end`.

/**
 * - `word`: a keyword or unquoted identifier (letters, digits, `_`, `$`; not starting with a digit or `$`)
 * - `string`: a string constant, `'...'` with its prefix if any (`E'...'`, `B'...'`, `X'...'`, `N'...'`, `U&'...'`)
 * - `identifier`: a quoted identifier, `"..."` or `U&"..."`
 * - `dollar`: a dollar-quoted string, `$$...$$` or `$tag$...$tag$`
 * - `parameter`: `$1`, `$2`, ...
 * - `comment`: `-- ...` to the end of the line, or a block comment (they nest)
 * - `semicolon`: `;`, a statement's end
 * - `space`: white space
 * - `number`: a run of digits (with `.`, `_` and exponent signs where they follow digits)
 * - `other`: one character of anything else (operators, punctuation)
 *
 * An unterminated quote or comment runs to the end of the text, as the server would refuse it.
 */
export type SqlTokenKind = 'word' | 'string' | 'identifier' | 'dollar' | 'parameter' | 'comment' | 'semicolon' | 'space' | 'number' | 'other'

/** Options of a lexer: how the server reads plain '...' strings. */
export interface SqlLexerOptions {
  /**
   * The server's standard_conforming_strings (on since PostgreSQL 9.1): off, a
   * backslash escapes the next character in plain '...' strings too, not only
   * in E'...' strings.
   */
  readonly standardConformingStrings?: boolean
}

const SPACE = 1
const WORD_START = 2
const WORD = 4
const DIGIT = 8

/** Character classes of the ASCII range; anything above it is a letter, as PostgreSQL's scanner takes high-bit bytes. */
const CLASS = new Uint8Array(128)
for (const c of ' \t\n\r\f\v') CLASS[c.charCodeAt(0)] = SPACE
for (let c = 0x41; c <= 0x5a; c++) CLASS[c] = CLASS[c + 0x20] = WORD_START | WORD
CLASS[0x5f] = WORD_START | WORD // _
for (let c = 0x30; c <= 0x39; c++) CLASS[c] = WORD | DIGIT
CLASS[0x24] = WORD // $ inside a word (a$b) quotes nothing

function charClass(code: number): number {
  return code < 128 ? CLASS[code]! : code === 0xa0 ? SPACE : WORD_START | WORD
}

/**
 * A cursor over the tokens of `text`: next() moves to the next token and
 * returns its kind ('end' past the last); `start` and `end` bound it.
 */
export class SqlLexer {
  kind: SqlTokenKind | 'end' = 'end'
  start = 0
  end = 0
  readonly #text: string
  readonly #standard: boolean

  constructor(text: string, options: SqlLexerOptions = {}) {
    this.#text = text
    this.#standard = options.standardConformingStrings !== false
  }

  get text(): string {
    return this.#text
  }

  /** The current token's text. */
  token(): string {
    return this.#text.slice(this.start, this.end)
  }

  /** The current token's text in lower case (for words: the keyword as the server folds it). */
  lower(): string {
    return this.#text.slice(this.start, this.end).toLowerCase()
  }

  /** Moves to the next token that is neither space nor a comment; returns its kind. */
  nextSignificant(): SqlTokenKind | 'end' {
    for (;;) {
      const kind = this.next()
      if (kind !== 'space' && kind !== 'comment') return kind
    }
  }

  next(): SqlTokenKind | 'end' {
    const s = this.#text
    const n = s.length
    let pos = (this.start = this.end)
    if (pos >= n) return (this.kind = 'end')
    const code = s.charCodeAt(pos)
    const cls = charClass(code)
    if (cls & SPACE) {
      while (++pos < n && charClass(s.charCodeAt(pos)) & SPACE);
      return this.#at(pos, 'space')
    }
    if (cls & WORD_START) {
      const next = s.charCodeAt(pos + 1)
      if (next === 0x27 /* ' */) {
        // E'...' reads backslash escapes, N'...' is a plain string, and B'...' and X'...' (bit strings) never take a backslash.
        const c = code | 0x20
        if (c === 0x65) return this.#at(quoteEnd(s, pos + 1, 0x27, true), 'string')
        if (c === 0x6e) return this.#at(quoteEnd(s, pos + 1, 0x27, !this.#standard), 'string')
        if (c === 0x62 || c === 0x78) return this.#at(quoteEnd(s, pos + 1, 0x27, false), 'string')
      } else if ((code | 0x20) === 0x75 && next === 0x26 /* & */) {
        // U&'...' and U&"...": Unicode escapes, written with a backslash that never escapes the quote.
        const q = s.charCodeAt(pos + 2)
        if (q === 0x27) return this.#at(quoteEnd(s, pos + 2, 0x27, false), 'string')
        if (q === 0x22) return this.#at(quoteEnd(s, pos + 2, 0x22, false), 'identifier')
      }
      while (++pos < n && charClass(s.charCodeAt(pos)) & WORD);
      return this.#at(pos, 'word')
    }
    if (cls & DIGIT) {
      while (++pos < n) {
        const c = s.charCodeAt(pos)
        if (charClass(c) & DIGIT || c === 0x2e /* . */ || c === 0x5f /* _ */) continue
        // An exponent: 1e10, 1.5E-3.
        if ((c | 0x20) === 0x65) {
          const sign = s.charCodeAt(pos + 1)
          if (sign === 0x2b || sign === 0x2d) pos++
          continue
        }
        break
      }
      return this.#at(pos, 'number')
    }
    switch (code) {
      case 0x27: // '
        return this.#at(quoteEnd(s, pos, 0x27, !this.#standard), 'string')
      case 0x22: // "
        return this.#at(quoteEnd(s, pos, 0x22, false), 'identifier')
      case 0x3b: // ;
        return this.#at(pos + 1, 'semicolon')
      case 0x24: // $
        return this.#dollar(pos)
      case 0x2d: // -
        if (s.charCodeAt(pos + 1) === 0x2d) {
          const nl = s.indexOf('\n', pos)
          return this.#at(nl < 0 ? n : nl + 1, 'comment')
        }
        break
      case 0x2f: // /
        if (s.charCodeAt(pos + 1) === 0x2a) return this.#at(commentEnd(s, pos), 'comment')
        break
    }
    return this.#at(pos + 1, 'other')
  }

  #at(end: number, kind: SqlTokenKind): SqlTokenKind {
    this.end = end
    return (this.kind = kind)
  }

  /** `$1`, a dollar quote, or a lone `$`. */
  #dollar(pos: number): SqlTokenKind {
    const s = this.#text
    const n = s.length
    let p = pos + 1
    if (p < n && charClass(s.charCodeAt(p)) & DIGIT) {
      while (++p < n && charClass(s.charCodeAt(p)) & DIGIT);
      return this.#at(p, 'parameter')
    }
    // The tag: a word without $ in it, then the closing $ of the opening delimiter.
    if (p < n && s.charCodeAt(p) !== 0x24) {
      if (!(charClass(s.charCodeAt(p)) & WORD_START)) return this.#at(pos + 1, 'other')
      while (++p < n) {
        const c = s.charCodeAt(p)
        if (c === 0x24 || !(charClass(c) & WORD)) break
      }
      if (s.charCodeAt(p) !== 0x24) return this.#at(pos + 1, 'other')
    }
    if (p >= n) return this.#at(pos + 1, 'other')
    const delimiter = s.slice(pos, p + 1)
    const close = s.indexOf(delimiter, p + 1)
    return this.#at(close < 0 ? n : close + delimiter.length, 'dollar')
  }
}

/** Past a quoted string or identifier starting at `pos`: a doubled quote stays inside, and so does a backslashed character when `backslashes`. */
function quoteEnd(s: string, pos: number, quote: number, backslashes: boolean): number {
  const n = s.length
  pos++
  while (pos < n) {
    const c = s.charCodeAt(pos)
    if (c === 0x5c && backslashes) pos += 2
    else if (c === quote) {
      if (s.charCodeAt(pos + 1) !== quote) return pos + 1
      pos += 2
    } else pos++
  }
  return n
}

/** Past a block comment starting at `pos`; they nest. */
function commentEnd(s: string, pos: number): number {
  const n = s.length
  let depth = 0
  while (pos < n) {
    if (s.charCodeAt(pos) === 0x2f && s.charCodeAt(pos + 1) === 0x2a) {
      depth++
      pos += 2
    } else if (s.charCodeAt(pos) === 0x2a && s.charCodeAt(pos + 1) === 0x2f) {
      pos += 2
      if (--depth === 0) return pos
    } else pos++
  }
  return n
}
