// Whether a text without parameters must go by the simple protocol. postgres.js
// runs unsafe() and file() without parameters that way, which allows several
// statements in one text but gives every value as text. A text of one
// statement runs as well by the extended protocol, where pipegres asks for
// the columns it decodes in binary (cheaper for the server and the client)
// and a prepared statement can be reused; the values come out the same. So
// only texts of several statements (or none) keep the simple protocol.
//
// The scan follows PostgreSQL's quoting (strings, quoted identifiers, dollar
// quotes, nested comments) just far enough to find the semicolons that end
// statements. A backslash makes it give up (whether it escapes a quote depends
// on standard_conforming_strings), as does anything it is unsure of: then the
// text keeps the simple protocol, which is always right.

const verdicts = new Map<string, boolean>()

/** True when `text` must run by the simple protocol: several statements, none, or a text the scan is unsure of. */
export function needsSimple(text: string): boolean {
  let v = verdicts.get(text)
  if (v === undefined) {
    v = !oneStatement(text)
    if (verdicts.size >= 10_000) verdicts.clear()
    verdicts.set(text, v)
  }
  return v
}

const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13)
const isIdent = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c >= 128

/** True only when the text is sure to hold exactly one statement (a trailing semicolon allowed). */
function oneStatement(s: string): boolean {
  if (s.includes('\\')) return false
  const n = s.length
  let seen = false
  let ended = false
  let i = 0
  while (i < n) {
    const c = s.charCodeAt(i)
    if (isSpace(c)) {
      i++
      continue
    }
    // Comments count as space.
    if (c === 45 /* - */ && s.charCodeAt(i + 1) === 45) {
      const eol = s.indexOf('\n', i)
      i = eol < 0 ? n : eol + 1
      continue
    }
    if (c === 47 /* / */ && s.charCodeAt(i + 1) === 42 /* * */) {
      let depth = 1
      i += 2
      while (i < n && depth > 0) {
        if (s.charCodeAt(i) === 47 && s.charCodeAt(i + 1) === 42) {
          depth++
          i += 2
        } else if (s.charCodeAt(i) === 42 && s.charCodeAt(i + 1) === 47) {
          depth--
          i += 2
        } else i++
      }
      if (depth > 0) return false
      continue
    }
    if (c === 59 /* ; */) {
      if (!seen) return false
      ended = true
      i++
      continue
    }
    if (ended) return false
    seen = true
    if (c === 39 /* ' */ || c === 34 /* " */) {
      // '' and "" inside are the quote doubled: the scan goes on past them as past two quoted texts.
      const end = s.indexOf(String.fromCharCode(c), i + 1)
      if (end < 0) return false
      i = end + 1
      continue
    }
    if (c === 36 /* $ */ && (i === 0 || !isIdent(s.charCodeAt(i - 1)))) {
      let j = i + 1
      while (j < n && isIdent(s.charCodeAt(j)) && s.charCodeAt(j) !== 36) j++
      if (s.charCodeAt(j) === 36) {
        const tag = s.slice(i, j + 1)
        // $1 is a parameter, not a dollar quote.
        const first = s.charCodeAt(i + 1)
        if (tag.length > 2 && first >= 48 && first <= 57) {
          i = j
          continue
        }
        const end = s.indexOf(tag, j + 1)
        if (end < 0) return false
        i = end + tag.length
        continue
      }
      i = j
      continue
    }
    i++
  }
  return seen
}
