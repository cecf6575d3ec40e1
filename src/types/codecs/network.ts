import { utf8Read } from '../../protocol/utf8.js'
import type { Writer } from '../../protocol/writer.js'
import { CodecError, describeValue, type Codec, type ResolvedTypeOptions } from '../codec.js'

// inet and cidr come back as the exact string PostgreSQL prints, so the text
// and binary formats must agree byte for byte: the binary formatter follows
// the rules of PostgreSQL's own inet_net_ntop (src/port/inet_net_ntop.c).
//
// Binary: family (PostgreSQL's own codes, not the OS's AF_*), prefix bits,
// is_cidr flag, address length, address bytes.

const PGSQL_AF_INET = 2
const PGSQL_AF_INET6 = 3

const INET_OID = 869
const CIDR_OID = 650

// Byte values as printed: decimal for IPv4, hex without and with a leading zero for IPv6 words.
const DECIMAL: readonly string[] = Array.from({ length: 256 }, (_, i) => String(i))
const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16))
const HEX2: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

function dotted(b: Uint8Array, at: number): string {
  return DECIMAL[b[at]!]! + '.' + DECIMAL[b[at + 1]!]! + '.' + DECIMAL[b[at + 2]!]! + '.' + DECIMAL[b[at + 3]!]!
}

function malformed(name: string, why: string): CodecError {
  return new CodecError(`malformed binary ${name}: ${why}`)
}

/** Formats an IPv6 address (16 bytes at `at`) exactly as PostgreSQL does. */
export function formatIpv6(b: Uint8Array, at: number): string {
  // The longest run of zero words (the first of equal ones, and only if at
  // least two long) becomes "::".
  let bestBase = -1
  let bestLen = 0
  let curBase = -1
  let curLen = 0
  for (let i = 0; i < 8; i++) {
    if (b[at + 2 * i] === 0 && b[at + 2 * i + 1] === 0) {
      if (curBase < 0) {
        curBase = i
        curLen = 1
      } else curLen++
    } else if (curBase >= 0) {
      if (curLen > bestLen) {
        bestBase = curBase
        bestLen = curLen
      }
      curBase = -1
    }
  }
  if (curBase >= 0 && curLen > bestLen) {
    bestBase = curBase
    bestLen = curLen
  }
  if (bestLen < 2) bestBase = -1

  let s = ''
  for (let i = 0; i < 8; i++) {
    if (bestBase >= 0 && i >= bestBase && i < bestBase + bestLen) {
      if (i === bestBase) s += ':'
      continue
    }
    if (i !== 0) s += ':'
    // IPv4-compatible (::a.b.c.d) and IPv4-mapped (::ffff:a.b.c.d) addresses
    // end in dotted decimal. (PostgreSQL's test for a run of 7 can never be
    // reached here: word 6 lies inside such a run.)
    if (i === 6 && bestBase === 0 && (bestLen === 6 || (bestLen === 5 && b[at + 10] === 0xff && b[at + 11] === 0xff))) {
      s += dotted(b, at + 12)
      break
    }
    const hi = b[at + 2 * i]!
    s += hi === 0 ? HEX[b[at + 2 * i + 1]!]! : HEX[hi]! + HEX2[b[at + 2 * i + 1]!]!
  }
  if (bestBase >= 0 && bestBase + bestLen === 8) s += ':'
  return s
}

function decodeBinaryAddress(name: string, cidr: boolean, buf: Uint8Array, start: number, end: number): string {
  if (end - start < 4) throw malformed(name, `${end - start} bytes`)
  const family = buf[start]!
  const bits = buf[start + 1]!
  const size = buf[start + 3]!
  let s: string
  let max: number
  if (family === PGSQL_AF_INET) {
    if (size !== 4 || end - start !== 8) throw malformed(name, 'IPv4 address of the wrong length')
    s = dotted(buf, start + 4)
    max = 32
  } else if (family === PGSQL_AF_INET6) {
    if (size !== 16 || end - start !== 20) throw malformed(name, 'IPv6 address of the wrong length')
    s = formatIpv6(buf, start + 4)
    max = 128
  } else throw malformed(name, `unknown address family ${family}`)
  if (bits > max) throw malformed(name, `${bits} prefix bits`)
  // The flag byte is ignored, as the server does: the type decides whether
  // a full-length prefix is shown.
  return bits === max && !cidr ? s : s + '/' + DECIMAL[bits]!
}

function decodeTextAddress(name: string, buf: Uint8Array, start: number, end: number): string {
  if (start === end) throw new CodecError(`malformed ${name}: empty`)
  for (let i = start; i < end; i++) {
    const c = buf[i]!
    // Digits, lower-case hex, '.', '/' and ':' are all the server prints.
    if (!((c >= 0x30 && c <= 0x3a) || (c >= 0x61 && c <= 0x66) || c === 0x2e || c === 0x2f)) {
      throw new CodecError(`malformed ${name}: unexpected character in text value`)
    }
  }
  return utf8Read(buf, start, end)
}

// Parsing for binary parameters. Only forms that PostgreSQL's own parser
// reads the same way are accepted; anything else (leading zeros, abbreviated
// IPv4, classful cidr defaults) goes as text for the server to judge.

const scratch = new Uint8Array(16)

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  return -1
}

/** A decimal number in [from, to) without leading zeros, at most `max`; -1 if not. */
function smallDecimal(s: string, from: number, to: number, max: number): number {
  if (from === to || to - from > 3 || (s.charCodeAt(from) === 0x30 && to - from > 1)) return -1
  let v = 0
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    if (!isDigit(c)) return -1
    v = v * 10 + c - 0x30
  }
  return v > max ? -1 : v
}

/**
 * Reads a dotted-quad IPv4 address starting at `from` into scratch[at..at+4).
 * Returns the index after it, or -1.
 */
function readIpv4(s: string, from: number, at: number): number {
  let i = from
  for (let octet = 0; octet < 4; octet++) {
    if (octet > 0) {
      if (s.charCodeAt(i) !== 0x2e) return -1
      i++
    }
    let j = i
    while (j < s.length && isDigit(s.charCodeAt(j))) j++
    const v = smallDecimal(s, i, j, 255)
    if (v < 0) return -1
    scratch[at + octet] = v
    i = j
  }
  return i
}

/** Prefix length after '/' at `slash` (the rest of the string), or -1. */
function readBits(s: string, slash: number, max: number): number {
  return smallDecimal(s, slash + 1, s.length, max)
}

/** Parses an IPv6 address with optional /bits into scratch; returns bits (128 if absent) or -1. */
function parseIpv6(s: string): number {
  const n = s.length
  let i = 0
  let tp = 0
  let gap = -1
  let needGroup = true
  if (s.charCodeAt(0) === 0x3a) {
    if (s.charCodeAt(1) !== 0x3a) return -1
    gap = 0
    i = 2
    needGroup = false
  }
  let bits = 128
  scratch.fill(0)
  for (;;) {
    if (i === n) {
      if (needGroup) return -1
      break
    }
    if (s.charCodeAt(i) === 0x2f) {
      if (needGroup) return -1
      bits = readBits(s, i, 128)
      if (bits < 0) return -1
      break
    }
    let j = i
    let v = 0
    for (; j < n; j++) {
      const h = hexValue(s.charCodeAt(j))
      if (h < 0) break
      v = v * 16 + h
    }
    if (j === i) return -1
    if (s.charCodeAt(j) === 0x2e) {
      // A trailing IPv4 part: nothing but /bits may follow it.
      if (tp + 4 > 16) return -1
      j = readIpv4(s, i, tp)
      if (j < 0) return -1
      tp += 4
      if (j === n) break
      if (s.charCodeAt(j) !== 0x2f) return -1
      bits = readBits(s, j, 128)
      if (bits < 0) return -1
      break
    }
    if (j - i > 4 || tp + 2 > 16) return -1
    scratch[tp++] = v >> 8
    scratch[tp++] = v & 0xff
    i = j
    if (i === n) break
    const c = s.charCodeAt(i)
    if (c === 0x2f) {
      needGroup = false
      continue
    }
    if (c !== 0x3a) return -1
    i++
    if (s.charCodeAt(i) === 0x3a) {
      if (gap >= 0) return -1
      gap = tp
      i++
      needGroup = false
    } else needGroup = true
  }
  if (gap >= 0) {
    if (tp === 16) return -1
    // Move the groups after "::" to the end; walking backwards never
    // overwrites a byte before it has been moved.
    const tail = tp - gap
    for (let k = 1; k <= tail; k++) {
      scratch[16 - k] = scratch[gap + tail - k]!
      scratch[gap + tail - k] = 0
    }
  } else if (tp !== 16) return -1
  return bits
}

/**
 * Parses `s` as an address for the binary format, leaving the address in
 * scratch. Returns family << 8 | bits, or -1 when the string should go as text.
 */
function parseAddress(s: string, cidr: boolean): number {
  if (s.indexOf(':') >= 0) {
    const bits = parseIpv6(s)
    return bits < 0 ? -1 : (PGSQL_AF_INET6 << 8) | bits
  }
  const j = readIpv4(s, 0, 0)
  if (j < 0) return -1
  // cidr infers a classful prefix from a bare IPv4 address: leave that to the server.
  if (j === s.length) return cidr ? -1 : (PGSQL_AF_INET << 8) | 32
  if (s.charCodeAt(j) !== 0x2f) return -1
  const bits = readBits(s, j, 32)
  return bits < 0 ? -1 : (PGSQL_AF_INET << 8) | bits
}

/** True when no bit after the first `bits` of the scratch address is set. */
function hostBitsZero(size: number, bits: number): boolean {
  for (let i = 0; i < size; i++) {
    const keep = bits - i * 8
    const mask = keep >= 8 ? 0 : keep <= 0 ? 0xff : 0xff >> keep
    if ((scratch[i]! & mask) !== 0) return false
  }
  return true
}

function addressCodec(name: string, cidr: boolean): Codec {
  const expects = (v: unknown) => new CodecError(`${name} needs a string; got ${describeValue(v)}`)
  return {
    name,
    decodeText: (buf, start, end) => decodeTextAddress(name, buf, start, end),
    decodeBinary: (buf, start, end) => decodeBinaryAddress(name, cidr, buf, start, end),
    encodeText(value) {
      if (typeof value !== 'string') throw expects(value)
      return value
    },
    encodeBinary(w: Writer, value) {
      if (typeof value !== 'string') throw expects(value)
      const a = parseAddress(value, cidr)
      if (a < 0) return false
      const family = a >> 8
      const bits = a & 0xff
      const size = family === PGSQL_AF_INET ? 4 : 16
      // The server reports a cidr with host bits set in its own words.
      if (cidr && !hostBitsZero(size, bits)) return false
      w.ensure(4 + size)
      const b = w.buf
      let p = w.pos
      b[p++] = family
      b[p++] = bits
      b[p++] = cidr ? 1 : 0
      b[p++] = size
      for (let i = 0; i < size; i++) b[p++] = scratch[i]!
      w.pos = p
      return true
    },
  }
}

export const inetCodec: Codec = addressCodec('inet', false)
export const cidrCodec: Codec = addressCodec('cidr', true)

export function registerNetworkCodecs(table: Map<number, Codec>, _options: ResolvedTypeOptions): void {
  table.set(INET_OID, inetCodec)
  table.set(CIDR_OID, cidrCodec)
}
