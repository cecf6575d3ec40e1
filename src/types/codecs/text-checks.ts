import { CodecError } from '../codec.js'

// Checks for strings sent as parameters of textual types. PostgreSQL text
// cannot hold NUL, and a lone UTF-16 surrogate has no UTF-8 form: the UTF-8
// encoder would silently put U+FFFD in its place, so both are refused here
// rather than stored altered. Only parameters are checked; results are not.

const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed

/** The fallback for runtimes without String.prototype.isWellFormed (exported for its tests). */
export function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0xd800 || c > 0xdfff) continue
    if (c >= 0xdc00) return true
    const d = s.charCodeAt(i + 1)
    if (!(d >= 0xdc00 && d <= 0xdfff)) return true
    i++
  }
  return false
}

/** Throws CodecError unless `s` can be stored unchanged in a value of type `name`. */
export function checkText(name: string, s: string): void {
  if (s.indexOf('\0') !== -1) throw new CodecError(`${name} cannot contain a NUL character`)
  if (isWellFormed ? !isWellFormed.call(s) : hasLoneSurrogate(s)) {
    throw new CodecError(`${name} value is not valid Unicode (it contains a lone surrogate)`)
  }
}
