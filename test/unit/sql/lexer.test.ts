// The SQL lexer: tokens cover the text exactly, and words hidden in quotes,
// E'' strings, dollar quotes, quoted identifiers and (nested) comments are
// never read as words, nor are semicolons in them read as statement ends.
// Statements are generated from pieces whose true tokens are known.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { SqlLexer, type SqlTokenKind } from '../../../src/sql/lexer.js'

function lex(text: string, standardConformingStrings = true): Array<[SqlTokenKind, string]> {
  const lexer = new SqlLexer(text, { standardConformingStrings })
  const out: Array<[SqlTokenKind, string]> = []
  for (let kind = lexer.next(); kind !== 'end'; kind = lexer.next()) out.push([kind, lexer.token()])
  return out
}

function words(text: string): string[] {
  return lex(text)
    .filter(([k]) => k === 'word')
    .map(([, t]) => t.toLowerCase())
}

test('tokens of each kind', () => {
  assert.deepEqual(lex("SELECT a$b, $1, E'x\\'y', 'it''s', \"q\"\"d\", $t$ ; $t$ -- c\n/* a /* b */ c */;"), [
    ['word', 'SELECT'],
    ['space', ' '],
    ['word', 'a$b'],
    ['other', ','],
    ['space', ' '],
    ['parameter', '$1'],
    ['other', ','],
    ['space', ' '],
    ['string', "E'x\\'y'"],
    ['other', ','],
    ['space', ' '],
    ['string', "'it''s'"],
    ['other', ','],
    ['space', ' '],
    ['identifier', '"q""d"'],
    ['other', ','],
    ['space', ' '],
    ['dollar', '$t$ ; $t$'],
    ['space', ' '],
    ['comment', '-- c\n'],
    ['comment', '/* a /* b */ c */'],
    ['semicolon', ';'],
  ])
})

test("prefixed strings: B'', X'', N'' and U&'' / U&\"\"", () => {
  assert.deepEqual(lex("B'101' x'ff' n'é' U&'d\\0061t' U&\"x\\+000061\""), [
    ['string', "B'101'"],
    ['space', ' '],
    ['string', "x'ff'"],
    ['space', ' '],
    ['string', "n'é'"],
    ['space', ' '],
    ['string', "U&'d\\0061t'"],
    ['space', ' '],
    ['identifier', 'U&"x\\+000061"'],
  ])
  // A word ending in e before a quote is a word, then a plain string.
  assert.deepEqual(lex("somee'x'"), [
    ['word', 'somee'],
    ['string', "'x'"],
  ])
})

test('standard_conforming_strings off: a backslash escapes in plain strings too', () => {
  assert.deepEqual(lex("'a\\'; DROP'", false), [['string', "'a\\'; DROP'"]])
  assert.deepEqual(lex("'a\\'; DROP'", true), [
    ['string', "'a\\'"],
    ['semicolon', ';'],
    ['space', ' '],
    ['word', 'DROP'],
    ['string', "'"],
  ])
})

test('dollar signs that quote nothing', () => {
  assert.deepEqual(lex('$ $1x $a b$'), [
    ['other', '$'],
    ['space', ' '],
    ['parameter', '$1'],
    ['word', 'x'],
    ['space', ' '],
    ['other', '$'],
    ['word', 'a'],
    ['space', ' '],
    ['word', 'b$'],
  ])
  assert.deepEqual(lex('$$ open'), [['dollar', '$$ open']])
})

test('unterminated quotes and comments run to the end of the text', () => {
  for (const text of ["'abc", '"abc', '$x$ abc', '/* abc /* */', "E'\\"]) assert.equal(lex(text).length, 1, text)
})

test('the tokens cover any text exactly, each non-empty', () => {
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(...'ab e$1_;\'"-/*\\\n\t&uUE.'.split(''), 'é', '\u00a0') }), fc.boolean(), (text, standard) => {
      const tokens = lex(text, standard)
      assert.equal(tokens.map(([, t]) => t).join(''), text)
      for (const [, t] of tokens) assert.ok(t.length > 0)
    }),
    { numRuns: 2000 },
  )
})

/** A piece of SQL with the words and statement ends the lexer must find in it. */
interface Piece {
  text: string
  words: readonly string[]
  semicolons: number
}

const KEYWORDS = ['select', 'insert', 'delete', 'update', 'set', 'listen', 'drop']
const hidden = fc.string({ unit: fc.constantFrom(...KEYWORDS, ' ', ';', "'", '"', '$', '\\', '*', '/', '-', '\n', 'x') })

const piece: fc.Arbitrary<Piece> = fc.oneof(
  fc.constantFrom(...KEYWORDS, 'users', 'a$b', '_x1').map((w) => ({ text: w, words: [w], semicolons: 0 })),
  fc.constantFrom(' ', '\n', '\t', ', ', '(', ')', ' = ', ' $1 ', ' 42 ', ' 1.5e-3 ').map((t) => ({ text: t, words: [], semicolons: 0 })),
  fc.constant<Piece>({ text: ';', words: [], semicolons: 1 }),
  // A string, its quotes doubled; an E'' string, quotes and backslashes escaped.
  hidden.map((s) => ({ text: ` '${s.replaceAll("'", "''")}' `, words: [], semicolons: 0 })),
  hidden.map((s) => ({ text: ` E'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}' `, words: [], semicolons: 0 })),
  hidden.map((s) => ({ text: ` "${s.replaceAll('"', '""')}" `, words: [], semicolons: 0 })),
  // A dollar quote whose tag the body never contains.
  fc.tuple(fc.constantFrom('', 'q', 'tag_1'), hidden).map(([tag, s]) => {
    const body = s.replaceAll('$', '')
    return { text: ` $${tag}$${body}$${tag}$ `, words: [], semicolons: 0 }
  }),
  hidden.map((s) => ({ text: ` --${s.replaceAll('\n', ' ')}\n`, words: [], semicolons: 0 })),
  // A block comment, nested once, whose body opens and closes nothing.
  fc.tuple(hidden, hidden).map(([a, b]) => {
    const flat = (x: string) => x.replaceAll('*', '').replaceAll('/', '')
    return { text: ` /*${flat(a)}/*${flat(b)}*/${flat(a)}*/ `, words: [], semicolons: 0 }
  }),
)

test('words in quotes, dollar quotes and comments are never words; their semicolons end nothing', () => {
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
      // Spaces between pieces, so that no two of them run together into one token.
      const text = pieces.map((p) => p.text).join(' ')
      assert.deepEqual(
        words(text),
        pieces.flatMap((p) => p.words),
      )
      assert.equal(lex(text).filter(([k]) => k === 'semicolon').length, pieces.reduce((n, p) => n + p.semicolons, 0))
    }),
    { numRuns: 1000 },
  )
})
