// `npm run fuzz [-- --minutes=N --scale=X --seed=S]`: the fuzz tests
// (test/unit/<folder>/fuzz-*.test.ts: the framer, the backend-message
// decoders, authentication, the browser-side parser, a whole client behind a
// scripted server) run again and again, each round with a fresh seed and X
// times the cases `npm test` runs, until the time is up or a round fails. A
// failure prints the seed and the command that replays it.
//
//   npm run fuzz                          5 minutes at scale 20
//   npm run fuzz -- --minutes=60          an hour
//   npm run fuzz -- --seed=123 --scale=50 one round with that seed, then stop
//
// PIPEGRES_FUZZ_MINUTES and PIPEGRES_FUZZ_SCALE set the same as the options.
// No database is needed: the client-level cases use a scripted fake server.

import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The compiled fuzz test files whose sources are still there (tsc never deletes an output). */
function fuzzFiles(): string[] {
  const found: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (/^fuzz-.*\.test\.js$/.test(entry.name) && existsSync(join(root, path.replace(/^build[\\/]/, '').replace(/\.js$/, '.ts')))) found.push(path)
    }
  }
  const unit = join('build', 'test', 'unit')
  if (existsSync(join(root, unit))) walk(unit)
  return found.sort()
}

const testFiles = fuzzFiles()

function option(name: string, env: string, fallback: number): number {
  const arg = process.argv.slice(2).find((a) => a.startsWith(`--${name}=`))
  const raw = arg !== undefined ? arg.slice(name.length + 3) : process.env[env]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} (${env}) must be a positive number, got ${JSON.stringify(raw)}`)
  return n
}

function usage(): never {
  console.error('usage: npm run fuzz [-- --minutes=N] [--scale=X] [--seed=S]')
  process.exit(2)
}

for (const a of process.argv.slice(2)) if (!/^--(minutes|scale|seed)=/.test(a)) usage()

const minutes = option('minutes', 'PIPEGRES_FUZZ_MINUTES', 5)
const scale = option('scale', 'PIPEGRES_FUZZ_SCALE', 20)
const seedArg = process.argv.slice(2).find((a) => a.startsWith('--seed='))
const fixedSeed = seedArg === undefined ? undefined : Number(seedArg.slice('--seed='.length)) | 0

interface Round {
  code: number
  output: string
}

let child: ReturnType<typeof spawn> | undefined

function runRound(seed: number): Promise<Round> {
  const env: NodeJS.ProcessEnv = { ...process.env, PIPEGRES_FUZZ_SEED: String(seed), PIPEGRES_FUZZ_SCALE: String(scale) }
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --enable-source-maps`.trim()
  return new Promise((resolve) => {
    let output = ''
    child = spawn(process.execPath, ['--test', '--test-reporter=spec', ...testFiles], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (output += s))
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (output += s))
    child.on('error', (err) => resolve({ code: 1, output: `could not run node --test: ${err.message}` }))
    child.on('close', (code, signal) => {
      child = undefined
      resolve({ code: code ?? (signal ? 1 : 0), output })
    })
  })
}

/** The property lines of a round: how many cases each ran, and the outcome tallies. */
function summary(output: string): string {
  const cases = [...output.matchAll(/seed -?\d+, (\d+) cases/g)].reduce((n, m) => n + Number(m[1]), 0)
  return `${cases} cases`
}

async function main(): Promise<number> {
  if (testFiles.length === 0) {
    console.error('no compiled fuzz tests in build/test/unit: run `npm run build:all` first')
    return 1
  }
  const stop = () => {
    child?.kill('SIGTERM')
    process.exit(130)
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)

  const deadline = Date.now() + minutes * 60_000
  console.log(fixedSeed === undefined ? `fuzzing for ${minutes} min at scale ${scale}` : `one round with seed ${fixedSeed} at scale ${scale}`)
  let total = 0
  for (let round = 1; ; round++) {
    const seed = fixedSeed ?? (Math.random() * 2 ** 31) | 0
    const t0 = Date.now()
    const { code, output } = await runRound(seed)
    const secs = ((Date.now() - t0) / 1000).toFixed(1)
    const cases = summary(output)
    total += Number.parseInt(cases, 10) || 0
    if (code !== 0) {
      console.log(output)
      console.error(`round ${round}, seed ${seed}: FAILED after ${secs} s`)
      console.error(`replay: PIPEGRES_FUZZ_SEED=${seed} PIPEGRES_FUZZ_SCALE=${scale} npm test -- /fuzz-`)
      return 1
    }
    console.log(`round ${round}, seed ${seed}: ${cases} passed in ${secs} s`)
    if (fixedSeed !== undefined || Date.now() >= deadline) break
  }
  console.log(`done: ${total} cases, no failure`)
  return 0
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
