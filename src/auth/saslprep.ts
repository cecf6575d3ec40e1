// SASLprep (RFC 4013, a profile of stringprep, RFC 3454) as PostgreSQL applies it to SCRAM
// passwords. The server computed the stored verifier from pg_saslprep()'s output, so what
// matters is producing the same string PostgreSQL does, not a textbook SASLprep. Where the
// two differ, this follows PostgreSQL (src/common/saslprep.c):
// - a password that SASLprep refuses (prohibited or unassigned characters, a bidi
//   violation, or nothing left after mapping) is used unchanged instead of failing;
// - pure ASCII is returned untouched, control characters included;
// - the prohibited-character and bidi checks run over the mapped string before NFKC
//   normalisation (RFC 3454 checks the normalised output). For example `e\u0341` is
//   refused by PostgreSQL, hence returned raw, although NFKC would turn it into `é`.

import { L_CAT, MAPPED_TO_NOTHING, NON_ASCII_SPACE, PROHIBITED, RAND_AL_CAT } from './saslprep-tables.js'

/** Whether `code` lies in one of the inclusive `[first, last]` ranges of a flat sorted table. */
export function inRanges(table: readonly number[], code: number): boolean {
  let lo = 0
  let hi = (table.length >> 1) - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (code < table[2 * mid]!) hi = mid - 1
    else if (code > table[2 * mid + 1]!) lo = mid + 1
    else return true
  }
  return false
}

/**
 * Prepares a password for SCRAM the way PostgreSQL does: maps non-ASCII spaces to U+0020,
 * removes characters "commonly mapped to nothing", normalises to NFKC. If the password is not
 * valid for SASLprep it is returned unchanged, as the server does when it stores it.
 */
export function saslprep(password: string): string {
  if (isAscii(password)) return password

  // Iterating the string yields code points; a lone surrogate comes out as itself and is
  // then refused by table C.5, so such a password is used as given.
  let mapped = ''
  const codes: number[] = []
  for (const ch of password) {
    const code = ch.codePointAt(0)!
    if (inRanges(NON_ASCII_SPACE, code)) {
      mapped += ' '
      codes.push(0x20)
    } else if (!inRanges(MAPPED_TO_NOTHING, code)) {
      mapped += ch
      codes.push(code)
    }
  }
  if (codes.length === 0) return password

  let hasRandAL = false
  for (const code of codes) {
    if (inRanges(PROHIBITED, code)) return password
    if (!hasRandAL && inRanges(RAND_AL_CAT, code)) hasRandAL = true
  }
  if (hasRandAL) {
    // RFC 3454 section 6: right-to-left text must not mix in left-to-right characters and
    // must begin and end with a right-to-left character.
    if (!inRanges(RAND_AL_CAT, codes[0]!) || !inRanges(RAND_AL_CAT, codes[codes.length - 1]!)) return password
    for (const code of codes) if (inRanges(L_CAT, code)) return password
  }
  return mapped.normalize('NFKC')
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false
  return true
}
