// Standard base64 (RFC 4648 section 4), written here rather than taken from Buffer so the auth
// layer imports nothing but node:crypto, and so decoding can be strict: SCRAM's grammar only
// allows canonical, padded base64, and anything else from a server is a malformed message.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

const DECODE = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i

export function encodeBase64(bytes: Uint8Array): string {
  let out = ''
  let i = 0
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!
  }
  const rest = bytes.length - i
  if (rest === 1) {
    const n = bytes[i]! << 16
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + '=='
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8)
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + '='
  }
  return out
}

/**
 * Decodes canonical padded base64; returns undefined for anything else (wrong length,
 * characters outside the alphabet, misplaced padding, non-zero bits in the padding).
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0
  const out = new Uint8Array((text.length / 4) * 3 - pad)
  let o = 0
  for (let i = 0; i < text.length; i += 4) {
    const last = i + 4 === text.length
    const a = sextet(text, i)
    const b = sextet(text, i + 1)
    const c = last && pad === 2 ? 0 : sextet(text, i + 2)
    const d = last && pad >= 1 ? 0 : sextet(text, i + 3)
    if ((a | b | c | d) < 0) return undefined
    const n = (a << 18) | (b << 12) | (c << 6) | d
    out[o++] = n >> 16
    if (o < out.length) out[o++] = (n >> 8) & 255
    else if ((n & 0xffff) !== 0) return undefined
    if (o < out.length) out[o++] = n & 255
    else if ((n & 0xff) !== 0) return undefined
  }
  return out
}

function sextet(text: string, i: number): number {
  const code = text.charCodeAt(i)
  return code < 128 ? DECODE[code]! : -1
}
