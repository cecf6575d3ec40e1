import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../../support/paths.js'

// CI runs what a new user runs, the README's `npm install` and `npm test`, and
// then only the test commands that CI alone runs; whatever a test needs, the
// test commands fetch or build themselves (scripts/prerequisites.ts). A set-up
// step in .ci/run (an apt-get, a script that fetches runtimes, a build of a
// pooler) would make CI pass where a new user's `npm test` fails: this test
// fails on any command in .ci/run that is not one of those.

/** The commands .ci/run may run besides the shell's own plumbing. */
const NPM_ALLOWED = [/^npm install( --no-audit| --no-fund)*$/, /^npm test$/, /^npm run test:[a-z-]+$/, /^npm --version$/]
/** Shell plumbing: printing, counting, the tree check, the step wrapper. Nothing that installs or fetches. */
const PLUMBING = new Set([
  'set', 'cd', 'export', 'echo', 'local', 'shift', 'if', 'then', 'else', 'elif', 'fi', 'for', 'in', 'do', 'done', 'return', 'exit', 'trap',
  'grep', 'tee', 'tail', 'awk', 'wc', 'ls', 'mktemp', 'rm', 'date', 'dirname', 'true', 'git', '[', 'check_tree', 'step', '{', '}',
  // The step wrapper's "$@", quoted away by commandsOf.
  '"Q"',
])
/** Commands that only report. */
const REPORTS = new Set(['node --version'])

/** Every simple command of a shell script, as text, including those inside $(...) and the steps `step NAME CMD...` runs. */
export function commandsOf(script: string): string[] {
  const commands: string[] = []
  for (let line of script.split('\n')) {
    if (/^\s*#/.test(line)) continue
    // Command substitutions inside double quotes run too.
    for (const m of line.matchAll(/\$\(([^()]*)\)/g)) commands.push(...split(m[1]!))
    line = line.replace(/\$\(([^()]*)\)/g, 'SUB').replace(/'[^']*'/g, "'Q'").replace(/"[^"]*"/g, '"Q"').replace(/\s#.*$/, '')
    commands.push(...split(line))
  }
  return commands
}

function split(line: string): string[] {
  return line
    .split(/;|&&|\|\||\||\bthen\b|\bdo\b|\belse\b/)
    .map((c) => c.trim().replace(/^((if|!|while|until)\s+)+/, '').replace(/^([A-Za-z_][A-Za-z0-9_]*=\S*\s*)+/, '').trim())
    .filter((c) => c !== '' && !/^[A-Za-z_][A-Za-z0-9_]*\(\)\s*\{?$/.test(c))
}

/** What is wrong with one command: undefined when it is the README's, a test command, or plumbing. */
export function refusal(command: string): string | undefined {
  // `step "name" npm test`: the command it runs is what counts.
  const stepped = /^step\s+"Q"\s+(.*)$/.exec(command)
  if (stepped) return refusal(stepped[1]!)
  if (command.startsWith('npm ')) return NPM_ALLOWED.some((r) => r.test(command)) ? undefined : `\`${command}\` is neither the README's npm install / npm test nor an npm run test:* command`
  const word = command.split(/\s+/)[0]!
  return PLUMBING.has(word) || REPORTS.has(command) ? undefined : `\`${command}\` is set-up the README's commands do not do (move it into what npm test fetches or builds: scripts/prerequisites.ts)`
}

test('.ci/run runs npm install, npm test and npm run test:* commands, and no set-up of its own', () => {
  const script = readFileSync(join(repoRoot, '.ci', 'run'), 'utf8')
  const commands = commandsOf(script)
  assert.deepEqual(commands.map(refusal).filter(Boolean), [])
  assert.ok(commands.some((c) => /^npm install\b/.test(c)), 'npm install')
  assert.ok(commands.some((c) => /npm test$/.test(c)), 'npm test')
  // Every npm run test:* it names exists, and runs a build and a script of the project's, nothing else.
  const scripts = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  for (const c of commands) {
    const m = /npm run (test:[a-z-]+)$/.exec(c)
    if (!m) continue
    const body = scripts[m[1]!]
    assert.ok(body !== undefined, `package.json has no script ${m[1]}`)
    for (const part of body.split('&&').map((p) => p.trim())) {
      assert.match(part, /^(npm run build(:all)?|node build\/scripts\/[a-z-]+\.js( [-=a-z0-9]+)*)$/, `${m[1]}: ${part}`)
    }
  }
  // The README's two commands are the ones CI starts with.
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8')
  assert.ok(readme.includes('npm install') && readme.includes('npm test'))
})

test('the check refuses a set-up step, and takes the plumbing', () => {
  const script = [
    'set -euo pipefail',
    'echo "=== node $(node --version)"',
    'if [ ! -x /usr/sbin/pgbouncer ]; then apt-get install -y pgbouncer; fi',
    'node build/scripts/runtimes.js',
    'npm ci',
    'step "the matrix" npm run test:matrix',
    'sudo scripts/build-pgbouncer.sh',
    'x=$(date +%s) && npm test | tee "$log"',
  ].join('\n')
  const refused = commandsOf(script).map(refusal).filter(Boolean)
  assert.equal(refused.length, 4, refused.join('\n'))
  for (const what of ['apt-get install', 'node build/scripts/runtimes.js', 'npm ci', 'sudo scripts']) {
    assert.ok(refused.some((r) => r!.includes(what)), `${what} refused`)
  }
})
