// The part of npm's version ranges that `npm run test:peers` needs, written
// here since the project depends on no semver package: comparing releases,
// and whether one satisfies a range (a peer range, another package's peer
// dependency on it, an engines.node). Prereleases never satisfy a range here:
// the peer tests are about releases.

type Triple = [number, number, number]

/** major.minor.patch of a release; undefined for a prerelease or anything else. */
export function parseRelease(version: string): Triple | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(version.trim())
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3])]
}

export function compareReleases(a: string, b: string): number {
  const x = parseRelease(a)
  const y = parseRelease(b)
  if (x === undefined || y === undefined) throw new Error(`not a release version: ${x === undefined ? a : b}`)
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!
  return 0
}

/** A bound: the version compared with `at` by `op`. */
interface Bound {
  op: '<' | '<=' | '>' | '>=' | '='
  at: Triple
}

const cmp = (x: Triple, y: Triple) => (x[0] - y[0]) || (x[1] - y[1]) || (x[2] - y[2])

function holds(v: Triple, b: Bound): boolean {
  const c = cmp(v, b.at)
  switch (b.op) {
    case '<':
      return c < 0
    case '<=':
      return c <= 0
    case '>':
      return c > 0
    case '>=':
      return c >= 0
    case '=':
      return c === 0
  }
}

/** One comparator (`>=1.2`, `^0.4.0`, `~2`, `1.x`, `*`) as the bounds it stands for. */
function bounds(op: string, raw: string, range: string): Bound[] {
  const parts = raw.split('.')
  const given = parts.findIndex((p) => p === '' || /^[xX*]$/.test(p))
  const n = given === -1 ? Math.min(parts.length, 3) : given
  const nums = parts.slice(0, n).map(Number)
  if (nums.some((x) => !Number.isInteger(x) || x < 0) || parts.length > 3) throw new Error(`cannot read the range ${JSON.stringify(range)}`)
  const at: Triple = [nums[0] ?? 0, nums[1] ?? 0, nums[2] ?? 0]
  /** The first version past the partial one: 1.2 → 1.3.0, 1 → 2.0.0. */
  const next = (): Triple => (n === 1 ? [at[0] + 1, 0, 0] : n === 2 ? [at[0], at[1] + 1, 0] : [at[0], at[1], at[2] + 1])
  if (n === 0) return op === '<' || op === '>' ? [{ op: '<', at: [0, 0, 0] }] : []
  switch (op) {
    case '':
    case '=':
      return n === 3 ? [{ op: '=', at }] : [{ op: '>=', at }, { op: '<', at: next() }]
    case '>=':
      return [{ op: '>=', at }]
    case '<':
      return [{ op: '<', at }]
    case '>':
      return n === 3 ? [{ op: '>', at }] : [{ op: '>=', at: next() }]
    case '<=':
      return n === 3 ? [{ op: '<=', at }] : [{ op: '<', at: next() }]
    case '~':
      return [{ op: '>=', at }, { op: '<', at: n === 1 ? [at[0] + 1, 0, 0] : [at[0], at[1] + 1, 0] }]
    case '^': {
      // The first non-zero part given may not change: ^1.2.3 < 2.0.0, ^0.4.1 < 0.5.0, ^0.0.3 < 0.0.4.
      const upper: Triple = at[0] > 0 || n === 1 ? [at[0] + 1, 0, 0] : at[1] > 0 || n === 2 ? [0, at[1] + 1, 0] : [0, 0, at[2] + 1]
      return [{ op: '>=', at }, { op: '<', at: upper }]
    }
  }
  throw new Error(`cannot read the range ${JSON.stringify(range)}`)
}

/** Whether the release `version` satisfies the npm range `range` (`>=0.4.0 <0.6.0`, `^18.19.0 || >=20.6.0`). */
export function satisfies(version: string, range: string): boolean {
  const v = parseRelease(version)
  if (v === undefined) return false
  return range.split('||').some((alternative) => {
    // A hyphen range, `1.2.3 - 2.3.4`, is both ends inclusive.
    const text = alternative.trim().replace(/^(\S+)\s+-\s+(\S+)$/, '>=$1 <=$2')
    const comparator = /(<=|>=|<|>|=|\^|~)?\s*v?([0-9xX*]+(?:\.[0-9xX*]+){0,2})/g
    if (text.replace(comparator, '').trim() !== '') throw new Error(`cannot read the range ${JSON.stringify(range)} (prereleases and other forms are not handled)`)
    // No comparator at all (an empty range) takes any release, as `*` does.
    return [...text.matchAll(comparator)].flatMap((m) => bounds(m[1] ?? '', m[2]!, range)).every((b) => holds(v, b))
  })
}
