import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { basename, join, relative, sep } from 'node:path'
import { repoRoot as root } from '../../support/paths.js'

// The tests are laid out like the code (README, "Development"): under each
// kind of test, folders that mirror src/, so that a module's tests are found
// by its path; helpers in test/support/ only; and no file name used twice, so
// that a name said in a failure, a filter or a commit points at one file.

/** The first level of test/: the kinds of tests, the type-level project, and the support tree. */
const KINDS = ['unit', 'integration', 'faults', 'browser', 'typecheck', 'support'] as const

/** The kinds whose folders mirror src/ (scripts/run-tests.ts starts no server for test/unit/). */
const MIRRORED = ['unit', 'integration', 'faults'] as const

/** Folders of a mirrored kind that name no src folder: tests of the project as a whole, and fault themes. */
const NOT_IN_SRC: Record<(typeof MIRRORED)[number], readonly string[]> = {
  unit: ['project'],
  integration: ['project'],
  faults: ['floods', 'security'],
}

/** Every file and folder under `dir`, as paths relative to it with '/' separators. */
function tree(dir: string): { files: string[]; dirs: string[] } {
  const files: string[] = []
  const dirs: string[] = []
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name)
      const rel = relative(dir, path).split(sep).join('/')
      if (entry.isDirectory()) {
        dirs.push(rel)
        walk(path)
      } else files.push(rel)
    }
  }
  walk(dir)
  return { files: files.sort(), dirs: dirs.sort() }
}

/** The names a test folder may mirror: src's folders (`types/codecs`) and its top-level modules (`errors` for errors.ts). */
function srcNames(): Set<string> {
  const { files, dirs } = tree(join(root, 'src'))
  return new Set([...dirs, ...files.filter((f) => !f.includes('/') && f.endsWith('.ts')).map((f) => f.slice(0, -3))])
}

/** Each file name used by more than one path, with those paths. */
export function sharedNames(files: readonly string[]): string[] {
  const byName = new Map<string, string[]>()
  for (const f of files) byName.set(basename(f), [...(byName.get(basename(f)) ?? []), f])
  return [...byName.values()].filter((paths) => paths.length > 1).map((paths) => paths.join(' and '))
}

/** Folders of test/ (relative to it) that break the layout, each with the reason. */
export function misplacedFolders(dirs: readonly string[], src: ReadonlySet<string>): string[] {
  const problems: string[] = []
  for (const dir of dirs) {
    const [kind, ...rest] = dir.split('/')
    if (!(KINDS as readonly string[]).includes(kind!)) {
      problems.push(`test/${dir}: not a kind of test (${KINDS.join(', ')})`)
      continue
    }
    const mirrored = MIRRORED.find((k) => k === kind)
    if (mirrored === undefined || rest.length === 0) continue
    const path = rest.join('/')
    if (src.has(path)) continue
    if (rest.length === 1 && NOT_IN_SRC[mirrored].includes(path)) continue
    if (NOT_IN_SRC[mirrored].includes(rest[0]!) && rest.length > 1) problems.push(`test/${dir}: ${rest[0]}/ takes no sub-folders`)
    else problems.push(`test/${dir}: no src/${path} to mirror, and not one of ${mirrored}'s own folders (${NOT_IN_SRC[mirrored].join(', ')})`)
  }
  return problems
}

/** Test files outside the kinds that run, and kinds' files in the wrong place. */
export function misplacedFiles(files: readonly string[]): string[] {
  const problems: string[] = []
  for (const file of files) {
    const kind = file.split('/')[0]!
    if (!file.includes('/')) problems.push(`test/${file}: every file belongs to one of ${KINDS.join(', ')}`)
    else if (kind === 'support' && file.endsWith('.test.ts')) problems.push(`test/${file}: a test in test/support/, which holds helpers only`)
  }
  return problems
}

const testTree = tree(join(root, 'test'))

test('no file name is used twice under test/', () => {
  assert.ok(testTree.files.length > 150, `${testTree.files.length} files found under test/`)
  assert.deepEqual(sharedNames(testTree.files), [])
})

test("test folders mirror src/: each folder of a kind names a folder or top-level module of src/, or one of the kind's own", () => {
  const src = srcNames()
  assert.ok(src.has('types/codecs') && src.has('integrations/pg') && src.has('errors'), 'src/ was read')
  assert.deepEqual(misplacedFolders(testTree.dirs, src), [])
  // Each of the kind's own folders is still there: an entry no folder uses is one to remove.
  for (const kind of MIRRORED) for (const own of NOT_IN_SRC[kind]) assert.ok(testTree.dirs.includes(`${kind}/${own}`), `test/${kind}/${own} is listed but missing`)
})

test('helpers live in test/support/, tests in the kinds that run', () => {
  assert.deepEqual(misplacedFiles(testTree.files), [])
})

test('the layout checks themselves catch a name used twice, a folder src/ does not have, and a misplaced file', () => {
  assert.deepEqual(sharedNames(['unit/types/containers.test.ts', 'integration/types/containers.test.ts', 'support/client.ts']), [
    'unit/types/containers.test.ts and integration/types/containers.test.ts',
  ])
  const src = new Set(['types', 'types/codecs', 'pool', 'errors'])
  assert.deepEqual(misplacedFolders(['unit', 'unit/types', 'unit/types/codecs', 'unit/errors', 'unit/project', 'support/fakes', 'typecheck'], src), [])
  assert.deepEqual(misplacedFolders(['unit/pools', 'integration/types/codec', 'faults/project', 'unit/project/x', 'helpers'], src), [
    "test/unit/pools: no src/pools to mirror, and not one of unit's own folders (project)",
    "test/integration/types/codec: no src/types/codec to mirror, and not one of integration's own folders (project)",
    "test/faults/project: no src/project to mirror, and not one of faults's own folders (floods, security)",
    'test/unit/project/x: project/ takes no sub-folders',
    'test/helpers: not a kind of test (unit, integration, faults, browser, typecheck, support)',
  ])
  assert.deepEqual(misplacedFiles(['support/x.test.ts', 'x.test.ts', 'unit/pool/routing.test.ts']), [
    'test/support/x.test.ts: a test in test/support/, which holds helpers only',
    'test/x.test.ts: every file belongs to one of unit, integration, faults, browser, typecheck, support',
  ])
})
