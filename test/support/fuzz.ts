// What the fuzz tests share (test/unit/*/fuzz-*.test.ts): seeded property
// checks whose failures say how to replay them, outcome tallies, and the
// rule that a reader throws only its own documented errors.
//
// Seeded: PIPEGRES_FUZZ_SEED=<n> replays a run (every failure prints it);
// PIPEGRES_FUZZ_SCALE=<x> multiplies the number of cases (scripts/fuzz.ts
// runs the fuzz files again and again at a larger scale, with fresh seeds).

import assert from 'node:assert/strict'
import { createHash, createHmac } from 'node:crypto'
import { relative, sep } from 'node:path'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { buildDir } from './paths.js'

const BASE_SEED = process.env.PIPEGRES_FUZZ_SEED ? Number(process.env.PIPEGRES_FUZZ_SEED) | 0 : (Math.random() * 2 ** 31) | 0
const SCALE = process.env.PIPEGRES_FUZZ_SCALE ? Number(process.env.PIPEGRES_FUZZ_SCALE) : 1
if (!Number.isFinite(BASE_SEED) || !(SCALE > 0)) throw new Error('PIPEGRES_FUZZ_SEED must be an integer and PIPEGRES_FUZZ_SCALE a positive number')

export const runs = (n: number): number => Math.max(1, Math.round(n * SCALE))

/** Each property gets its own seed from the base seed and its name, so a filtered run replays the same cases. */
function seedFor(name: string): number {
  return (BASE_SEED ^ createHash('sha256').update(name).digest().readInt32BE(0)) | 0
}

/** The command that runs `file` (a compiled test file's URL) again with the same seed and scale. */
function reproduce(file: string): string {
  const source = relative(buildDir, fileURLToPath(file)).split(sep).join('/').replace(/\.js$/, '.ts')
  return `PIPEGRES_FUZZ_SEED=${BASE_SEED}${SCALE !== 1 ? ` PIPEGRES_FUZZ_SCALE=${SCALE}` : ''} npm test -- ${source}`
}

function failed(file: string, t: TestContext, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err)
  throw new Error(`fuzz case failed; replay with: ${reproduce(file)} --test-name-pattern=${JSON.stringify(t.name)}\n${message}`, { cause: err })
}

/**
 * The property checks of one test file (`import.meta.url`): each case runs under the
 * property's own seed, and a failure says how to replay it.
 */
export function fuzzer(file: string) {
  return {
    check<Ts extends [unknown, ...unknown[]]>(t: TestContext, numRuns: number, arbs: { [K in keyof Ts]: fc.Arbitrary<Ts[K]> }, body: (...args: Ts) => void): void {
      t.diagnostic(`seed ${BASE_SEED}, ${numRuns} cases`)
      try {
        fc.assert(fc.property(...arbs, body), { seed: seedFor(t.name), numRuns })
      } catch (err) {
        failed(file, t, err)
      }
    },

    async checkAsync<Ts extends [unknown, ...unknown[]]>(
      t: TestContext,
      numRuns: number,
      arbs: { [K in keyof Ts]: fc.Arbitrary<Ts[K]> },
      body: (...args: Ts) => Promise<void>,
    ): Promise<void> {
      t.diagnostic(`seed ${BASE_SEED}, ${numRuns} cases`)
      try {
        await fc.assert(fc.asyncProperty(...arbs, body), { seed: seedFor(t.name), numRuns })
      } catch (err) {
        failed(file, t, err)
      }
    },
  }
}

/** An error as a failure message shows it: class, message and stack. */
export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.constructor.name}: ${err.message}\n${err.stack ?? ''}` : String(err)
}

/** Counts outcomes by name, for a diagnostic line showing that a property reached both sides. */
export class Tally {
  private readonly counts = new Map<string, number>()
  add(outcome: string): void {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1)
  }
  report(t: TestContext): void {
    t.diagnostic([...this.counts].map(([k, n]) => `${k}: ${n}`).join(', '))
  }
}

export const outcome = (r: unknown): string => (r instanceof Error ? r.constructor.name : 'decoded')

/** Runs `fn`; a throw must be one of `allowed`. */
export function only(allowed: readonly (abstract new (...args: never[]) => Error)[], fn: () => unknown): unknown {
  try {
    return fn()
  } catch (err) {
    if (allowed.some((c) => err instanceof c)) return err
    assert.fail(`threw ${describeError(err)}`)
  }
}

/** HMAC-SHA-256, for playing the server's side of SCRAM. */
export function hmac(key: Uint8Array, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}
