import { test } from 'node:test'
import assert from 'node:assert/strict'
import { saslprep } from '../../../src/auth/index.js'
import { inRanges } from '../../../src/auth/saslprep.js'
import { L_CAT, MAPPED_TO_NOTHING, NON_ASCII_SPACE, PROHIBITED, RAND_AL_CAT } from '../../../src/auth/saslprep-tables.js'

test('RFC 4013 section 3 examples', () => {
  assert.equal(saslprep('I\u00ADX'), 'IX') // SOFT HYPHEN mapped to nothing
  assert.equal(saslprep('user'), 'user')
  assert.equal(saslprep('USER'), 'USER') // case is preserved
  assert.equal(saslprep('\u00AA'), 'a') // NFKC
  assert.equal(saslprep('\u2168'), 'IX') // ROMAN NUMERAL NINE, NFKC
  // The RFC's error cases: PostgreSQL then uses the password as given, and so do we.
  assert.equal(saslprep('\u0007'), '\u0007') // prohibited character
  assert.equal(saslprep('\u0627\u0031'), '\u0627\u0031') // bidi: must end with a RandALCat
})

test('non-ASCII spaces become U+0020', () => {
  const spaces = [0x00a0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x202f, 0x205f, 0x3000]
  for (const code of spaces) {
    assert.equal(saslprep(`pass${String.fromCodePoint(code)}word`), 'pass word', `U+${code.toString(16)}`)
  }
  // U+200B is in both C.1.2 and B.1; PostgreSQL checks the space table first.
  assert.equal(saslprep('pass\u200Bword'), 'pass word')
  assert.equal(saslprep('\u00A0\u00A0'), '  ')
})

test('characters commonly mapped to nothing are removed', () => {
  for (const code of [0x00ad, 0x034f, 0x1806, 0x180b, 0x180c, 0x180d, 0x200c, 0x200d, 0x2060, 0xfe00, 0xfe0f, 0xfeff]) {
    assert.equal(saslprep(`a${String.fromCodePoint(code)}b`), 'ab', `U+${code.toString(16)}`)
  }
})

test('a password that maps to nothing is used as given, as PostgreSQL does', () => {
  assert.equal(saslprep('\u00AD'), '\u00AD')
  assert.equal(saslprep('\u200C\uFEFF'), '\u200C\uFEFF')
  assert.equal(saslprep(''), '')
})

test('NFKC normalisation', () => {
  assert.equal(saslprep('\uFF50\uFF41\uFF53\uFF53'), 'pass') // fullwidth
  assert.equal(saslprep('\uFB01x'), 'fix') // ligature
  assert.equal(saslprep('e\u0301'), '\u00E9') // composition
  assert.equal(saslprep('\u00BD'), '1\u20442')
  assert.equal(saslprep('\u212B'), '\u00C5') // ANGSTROM SIGN
  assert.equal(saslprep('pässwörd'), 'pässwörd')
})

test('ASCII passwords are returned untouched, control characters included', () => {
  for (const password of ['', 'hunter2', ' leading and trailing ', 'tab\there', 'bell\u0007', 'del\u007f', 'x'.repeat(10_000)]) {
    assert.equal(saslprep(password), password)
  }
})

test('prohibited characters make the password be used as given', () => {
  const cases = [
    'ab\u0080c', // C.2.2 non-ASCII control
    'x\u0007é', // C.2.1 ASCII control in a non-ASCII password
    'é\u06DD', // C.2.2
    'é\u200E', // C.8 LEFT-TO-RIGHT MARK
    'é\u2028', // C.2.2 LINE SEPARATOR
    'é\uE000', // C.3 private use
    'é\u{F0000}', // C.3 plane 15
    'é\uFDD0', // C.4 non-character
    'é\u{1FFFE}', // C.4
    'é\uFFFD', // C.6 REPLACEMENT CHARACTER
    'é\u2FF0', // C.7
    'é\u{E0001}', // C.9 LANGUAGE TAG
    'é\u{E0041}', // C.9
    'é\uD800', // C.5 lone surrogate
    'é\uDC00x', // C.5 lone surrogate
    'é\u0221', // A.1 unassigned in Unicode 3.2
    'é\u{1F600}', // A.1: emoji came after Unicode 3.2
    '\uFF50\uFF41\uFF53\uFF53\u{1F600}', // would normalise, but the emoji vetoes it
  ]
  for (const password of cases) assert.equal(saslprep(password), password, JSON.stringify(password))
})

test('the checks run on the mapped string before NFKC, as in PostgreSQL', () => {
  // U+0341 COMBINING ACUTE TONE MARK is prohibited (C.8); NFKC would turn it into U+0301 and
  // `e\u0341` into `é`, so a check after normalisation would accept it. PostgreSQL does not.
  assert.equal(saslprep('e\u0341'), 'e\u0341')
  // ARABIC LETTER ALEF + ARABIC FATHATAN ISOLATED FORM: fine before NFKC (both RandALCat),
  // although NFKC ends the string with a space and a combining mark.
  assert.equal(saslprep('\u0627\uFE70'), '\u0627 \u064B')
})

test('bidirectional rules (RFC 3454 section 6)', () => {
  assert.equal(saslprep('\u0627\u0628'), '\u0627\u0628') // all RandALCat
  assert.equal(saslprep('\u05D0\u05D1'), '\u05D0\u05D1') // Hebrew
  assert.equal(saslprep('\u0627 1 \u0628'), '\u0627 1 \u0628') // neutral and numbers in between are fine
  assert.equal(saslprep('\u0627a\u0628'), '\u0627a\u0628') // contains an LCat: refused
  assert.equal(saslprep('1\u0627'), '1\u0627') // does not start with a RandALCat
  assert.equal(saslprep('\u0627\u00E9\u0628'), '\u0627\u00E9\u0628') // é is LCat
  assert.equal(saslprep('\u0627\u0628\u00A0'), '\u0627\u0628\u00A0') // ends with a space after mapping: refused
  // Mapping happens before the bidi check: soft hyphens vanish, so this string is valid.
  assert.equal(saslprep('\u00AD\u0627\u0628\u00AD'), '\u0627\u0628')
  // Normalisation still applies to valid right-to-left text.
  assert.equal(saslprep('\uFB2A'), '\u05E9\u05C1')
})

test('tables are sorted, disjoint, merged inclusive ranges', () => {
  for (const [name, table] of Object.entries({ NON_ASCII_SPACE, MAPPED_TO_NOTHING, PROHIBITED, RAND_AL_CAT, L_CAT })) {
    assert.equal(table.length % 2, 0, name)
    for (let i = 0; i < table.length; i += 2) {
      assert.ok(table[i]! <= table[i + 1]!, `${name}[${i}]`)
      assert.ok(table[i + 1]! <= 0x10ffff, `${name}[${i}]`)
      if (i > 0) assert.ok(table[i]! > table[i - 1]! + 1, `${name}[${i}] overlaps or touches the previous range`)
    }
  }
  assert.ok(inRanges(PROHIBITED, 0) && inRanges(PROHIBITED, 0x10ffff))
  assert.ok(!inRanges(PROHIBITED, 0x41) && !inRanges(RAND_AL_CAT, 0x41) && inRanges(L_CAT, 0x41))
})

test('PROHIBITED covers every code point that is still unassigned, private or a surrogate today', () => {
  // Unicode never unassigns a code point, so anything unassigned now was unassigned in 3.2
  // (A.1) or is a non-character (C.4); private use (C.3) and surrogates (C.5) are fixed sets.
  // This catches a range dropped from the generated table.
  const cn = /^\p{Cn}$/u
  const co = /^\p{Co}$/u
  for (let code = 0; code <= 0x10ffff; code++) {
    const isSurrogate = code >= 0xd800 && code <= 0xdfff
    if (isSurrogate || cn.test(String.fromCodePoint(code)) || co.test(String.fromCodePoint(code))) {
      if (!inRanges(PROHIBITED, code)) assert.fail(`U+${code.toString(16)} is not in PROHIBITED`)
    }
  }
})

test('RAND_AL_CAT and L_CAT agree with the scripts they cover', () => {
  // Spot checks of Unicode 3.2 bidi classes against today's scripts, which did not change.
  for (const code of [0x05d0, 0x05ea, 0x0627, 0x064a, 0x0710, 0x0780, 0xfb1d, 0xfe70, 0xfefc]) {
    assert.ok(inRanges(RAND_AL_CAT, code), `U+${code.toString(16)}`)
    assert.ok(!inRanges(L_CAT, code), `U+${code.toString(16)}`)
  }
  for (const code of [0x41, 0x7a, 0xe9, 0x03b1, 0x0430, 0x4e00, 0xac00, 0x1d400]) {
    assert.ok(inRanges(L_CAT, code), `U+${code.toString(16)}`)
    assert.ok(!inRanges(RAND_AL_CAT, code), `U+${code.toString(16)}`)
  }
  for (const code of [0x20, 0x30, 0x2d, 0x0660, 0x064b]) {
    assert.ok(!inRanges(L_CAT, code) && !inRanges(RAND_AL_CAT, code), `U+${code.toString(16)}`)
  }
})
