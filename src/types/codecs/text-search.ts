import { utf8Read } from '../../protocol/utf8.js'
import { CodecError, describeValue, type Codec, type ResolvedTypeOptions } from '../codec.js'
import { readInt16, readInt32, readUint16 } from './binary.js'

// tsvector and tsquery come back as the exact text PostgreSQL prints; the
// binary decoders rebuild that text (tsvectorout and infix() in tsquery.c),
// so both formats give the same string. Parameters always go as text.

const TSVECTOR_OID = 3614
const TSQUERY_OID = 3615

const QUOTE = 0x27
const BACKSLASH = 0x5c

function malformed(name: string, why: string): CodecError {
  return new CodecError(`malformed binary ${name}: ${why}`)
}

/** The index of the NUL ending the string at `at`, or -1. */
function findNul(buf: Uint8Array, at: number, end: number): number {
  for (let i = at; i < end; i++) if (buf[i] === 0) return i
  return -1
}

/** A lexeme in quotes, with quotes and backslashes doubled as the server prints them. */
function quoteLexeme(buf: Uint8Array, start: number, end: number): string {
  // Both are ASCII, so they never occur inside a multi-byte UTF-8 sequence.
  let plain = true
  for (let i = start; i < end; i++) {
    const c = buf[i]
    if (c === QUOTE || c === BACKSLASH) {
      plain = false
      break
    }
  }
  const s = utf8Read(buf, start, end)
  if (plain) return `'${s}'`
  let out = "'"
  let from = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === QUOTE || c === BACKSLASH) {
      out += s.slice(from, i + 1) + s[i]
      from = i + 1
    }
  }
  return out + s.slice(from) + "'"
}

const WEIGHT_LETTERS = ['', 'C', 'B', 'A'] as const

export function decodeTsvectorBinary(buf: Uint8Array, start: number, end: number): string {
  if (end - start < 4) throw malformed('tsvector', `${end - start} bytes`)
  const count = readInt32(buf, start)
  if (count < 0) throw malformed('tsvector', `${count} lexemes`)
  let p = start + 4
  let s = ''
  for (let i = 0; i < count; i++) {
    const nul = findNul(buf, p, end)
    if (nul < 0 || nul + 3 > end) throw malformed('tsvector', 'lexeme past the end of the value')
    if (i > 0) s += ' '
    s += quoteLexeme(buf, p, nul)
    const positions = readUint16(buf, nul + 1)
    p = nul + 3
    if (p + 2 * positions > end) throw malformed('tsvector', 'positions past the end of the value')
    for (let j = 0; j < positions; j++, p += 2) {
      // Position in the low 14 bits, weight (3 A, 2 B, 1 C, 0 D unprinted) in the top 2.
      const v = readUint16(buf, p)
      s += (j === 0 ? ':' : ',') + (v & 0x3fff) + WEIGHT_LETTERS[v >> 14]!
    }
  }
  if (p !== end) throw malformed('tsvector', 'trailing bytes')
  return s
}

// tsquery items, by the operator code of the binary format (0 for an operand).
const OPERAND = 0
const NOT = 1
const AND = 2
const OR = 3
const PHRASE = 4
// Binding strength per item kind, as in PostgreSQL's tsearch_op_priority; an
// operand never needs parentheses.
const PRIORITY = [5, 4, 2, 1, 3] as const

function operandText(buf: Uint8Array, start: number, end: number, weight: number, prefix: boolean): string {
  let s = quoteLexeme(buf, start, end)
  if (weight === 0 && !prefix) return s
  s += ':'
  if (prefix) s += '*'
  if (weight & 8) s += 'A'
  if (weight & 4) s += 'B'
  if (weight & 2) s += 'C'
  if (weight & 1) s += 'D'
  return s
}

/**
 * Items come in prefix order with each binary operator followed by its right
 * operand, then its left. Walking them backwards, every subtree is complete
 * by the time its operator is reached, so the text is built bottom-up on a
 * stack (no recursion: a deeply nested query cannot overflow the JS stack).
 */
export function decodeTsqueryBinary(buf: Uint8Array, start: number, end: number): string {
  if (end - start < 4) throw malformed('tsquery', `${end - start} bytes`)
  const count = readInt32(buf, start)
  // Every item takes at least two bytes.
  if (count < 0 || count > (end - start - 4) / 2) throw malformed('tsquery', `${count} items in ${end - start} bytes`)
  if (count === 0) {
    if (end - start !== 4) throw malformed('tsquery', 'trailing bytes')
    return ''
  }
  const kinds = new Uint8Array(count)
  const texts: string[] = new Array(count)
  let p = start + 4
  for (let i = 0; i < count; i++) {
    if (p + 2 > end) throw malformed('tsquery', 'item past the end of the value')
    const type = buf[p]!
    if (type === 1) {
      if (p + 3 > end) throw malformed('tsquery', 'operand past the end of the value')
      const weight = buf[p + 1]!
      const prefix = buf[p + 2] !== 0
      const nul = findNul(buf, p + 3, end)
      if (nul < 0) throw malformed('tsquery', 'operand past the end of the value')
      kinds[i] = OPERAND
      texts[i] = operandText(buf, p + 3, nul, weight, prefix)
      p = nul + 1
    } else if (type === 2) {
      const op = buf[p + 1]!
      if (op < NOT || op > PHRASE) throw malformed('tsquery', `unknown operator ${op}`)
      kinds[i] = op
      p += 2
      if (op === PHRASE) {
        if (p + 2 > end) throw malformed('tsquery', 'phrase distance past the end of the value')
        const distance = readInt16(buf, p)
        texts[i] = distance === 1 ? ' <-> ' : ` <${distance}> `
        p += 2
      } else texts[i] = op === AND ? ' & ' : op === OR ? ' | ' : '!'
    } else throw malformed('tsquery', `unknown item type ${type}`)
  }
  if (p !== end) throw malformed('tsquery', 'trailing bytes')

  const stackText: string[] = new Array(count)
  const stackKind = new Uint8Array(count)
  let top = 0
  for (let i = count - 1; i >= 0; i--) {
    const kind = kinds[i]!
    if (kind === OPERAND) {
      stackText[top] = texts[i]!
      stackKind[top++] = OPERAND
      continue
    }
    const priority = PRIORITY[kind]!
    if (kind === NOT) {
      if (top < 1) throw malformed('tsquery', 'operator without an operand')
      const child = stackText[top - 1]!
      stackText[top - 1] = PRIORITY[stackKind[top - 1]!]! < priority ? `!( ${child} )` : `!${child}`
      stackKind[top - 1] = NOT
      continue
    }
    if (top < 2) throw malformed('tsquery', 'operator without two operands')
    const rightKind = stackKind[top - 1]!
    let right = stackText[top - 1]!
    let left = stackText[top - 2]!
    // A phrase on the right of a phrase keeps its parentheses: <-> is not associative.
    if (PRIORITY[rightKind]! < priority || (kind === PHRASE && rightKind === PHRASE)) right = `( ${right} )`
    if (PRIORITY[stackKind[top - 2]!]! < priority) left = `( ${left} )`
    top--
    stackText[top - 1] = left + texts[i]! + right
    stackKind[top - 1] = kind
  }
  if (top !== 1) throw malformed('tsquery', 'operands without an operator')
  return stackText[0]!
}

function textOnly(name: string, decodeBinary: (buf: Uint8Array, start: number, end: number) => string): Codec {
  return {
    name,
    decodeText: (buf, start, end) => utf8Read(buf, start, end),
    decodeBinary,
    // The text is the value as is; rebuilding it from binary measured 3 to 5
    // times slower (e.g. 60 vs 315 ns for a five-lexeme tsvector).
    preferBinary: false,
    encodeText(value) {
      if (typeof value !== 'string') throw new CodecError(`${name} needs a string; got ${describeValue(value)}`)
      return value
    },
  }
}

export const tsvectorCodec: Codec = textOnly('tsvector', decodeTsvectorBinary)
export const tsqueryCodec: Codec = textOnly('tsquery', decodeTsqueryBinary)

export function registerTextSearchCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(TSVECTOR_OID, tsvectorCodec)
  table.set(TSQUERY_OID, tsqueryCodec)
}
