import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  FULL_RUNS,
  MATRIX_EXCLUSIONS,
  NODE_LINES,
  POSTGRES_MAJORS,
  POSTGRES_SOURCES,
  README_MARKERS,
  ciPlan,
  manifestVersions,
  nodeAlias,
  testedWhereBlock,
} from '../../support/servers/matrix.js'
import { parseTapFailures, tagsOf } from '../../../scripts/test-lanes.js'
import { repoRoot as root } from '../../support/paths.js'

// What is tested where: the README's table, CI's plan and the runtimes manifest
// are one list (test/support/servers/matrix.ts), and the runner reads the failures it
// reports from node --test's TAP as each Node line writes it.

test("the README's tested-where table is the one test/support/servers/matrix.ts makes", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const from = readme.indexOf(README_MARKERS.start)
  const to = readme.indexOf(README_MARKERS.end)
  assert.ok(from !== -1 && to > from, `README.md has the ${README_MARKERS.start} ... ${README_MARKERS.end} block`)
  const block = readme.slice(from + README_MARKERS.start.length, to).trim()
  assert.equal(block, testedWhereBlock(), 'regenerate it: npm run build:all && node build/scripts/test-matrix.js --readme')
})

test('CI runs every Node line on every server: the full suite twice, the matrix subset on the rest', () => {
  const plan = ciPlan()
  assert.equal(plan.length, NODE_LINES.length * POSTGRES_MAJORS.length)
  const keys = plan.map((r) => `${r.node}/${r.postgres}`)
  assert.equal(new Set(keys).size, keys.length, 'each combination once')
  assert.deepEqual(
    plan.filter((r) => r.suite === 'full').map((r) => ({ node: r.node, postgres: r.postgres, sslmode: r.sslmode })),
    FULL_RUNS.map((r) => ({ node: r.node, postgres: r.postgres, sslmode: r.sslmode })),
  )
  // One full run over TLS, one over plain TCP: the two read paths differ.
  assert.deepEqual(new Set(FULL_RUNS.map((r) => r.sslmode ?? 'tls')), new Set(['tls', 'disable']))
  for (const r of plan.filter((r) => r.suite === 'matrix')) {
    const expected = MATRIX_EXCLUSIONS.filter((e) => e.postgres.includes(r.postgres)).flatMap((e) => e.files)
    assert.deepEqual(r.exclude, expected, `${r.node}/${r.postgres} leaves out exactly what MATRIX_EXCLUSIONS says`)
  }
  for (const e of MATRIX_EXCLUSIONS) assert.ok(e.reason.length > 20 && e.files.length > 0, 'an exclusion says what and why')
})

test('.ci/run runs the plan through npm run test:matrix, which installs the runtimes itself', () => {
  const ci = readFileSync(join(root, '.ci', 'run'), 'utf8')
  assert.match(ci, /npm run test:matrix/)
  assert.match(ci, /git status --porcelain/)
  const matrix = readFileSync(join(root, 'scripts', 'test-matrix.ts'), 'utf8')
  assert.match(matrix, /setUp\(needs/)
})

test('the runtimes manifest pins each Node line and each npm server exactly, and is locked', () => {
  const versions = manifestVersions()
  for (const line of NODE_LINES) assert.match(versions[nodeAlias(line)] ?? '', new RegExp(`^${line}\\.\\d+\\.\\d+$`), `node${line}`)
  for (const major of POSTGRES_MAJORS) {
    const source = POSTGRES_SOURCES[major]
    if (source.from === 'runtimes') assert.match(versions[source.alias] ?? '', new RegExp(`^${major}\\.\\d+\\.\\d+(-beta\\.\\d+)?$`), source.alias)
  }
  const lock = JSON.parse(readFileSync(join(root, 'test', 'support', 'runtimes', 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; integrity?: string; dependencies?: Record<string, string> }>
  }
  const manifest = JSON.parse(readFileSync(join(root, 'test', 'support', 'runtimes', 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
  assert.deepEqual(lock.packages['']?.dependencies, manifest.dependencies, 'the lock is the manifest\'s: npm install --package-lock-only --prefix test/support/runtimes')
  for (const [alias, version] of Object.entries(versions)) {
    const entry = lock.packages[`node_modules/${alias}`]
    assert.equal(entry?.version, version, alias)
    assert.match(entry?.integrity ?? '', /^sha512-/, alias)
  }
})

test('tags combine: a file can be slow or exclusive and in the matrix', () => {
  assert.deepEqual(tagsOf('// test-tags: exclusive, matrix (it measures the event loop)\n'), { slow: false, exclusive: true, matrix: true, pglite: false, stress: false })
  assert.deepEqual(tagsOf('// test-tags: slow, matrix\n'), { slow: true, exclusive: false, matrix: true, pglite: false, stress: false })
})

test('failed tests and the first line of their errors, read from the TAP of Node 20 and of Node 26', () => {
  // Node 26 adds `type:` to each YAML block; the rest is the same.
  for (const type of ['', "  type: 'test'\n"]) {
    const indent = (n: number, s: string) => s.replace(/^/gm, ' '.repeat(n))
    const tap = [
      'TAP version 13',
      '# Subtest: passes',
      'ok 1 - passes',
      '  ---',
      '  duration_ms: 1.2',
      ...(type ? [type.trimEnd()] : []),
      '  ...',
      '# Subtest: group',
      '    # Subtest: fails inner',
      '    not ok 1 - fails inner',
      '      ---',
      '      duration_ms: 1.9',
      ...(type ? [indent(4, type).trimEnd()] : []),
      "      location: '/x.test.js:5:3'",
      "      failureType: 'testCodeFailure'",
      '      error: |-',
      '        ',
      '        one is not two',
      '        ',
      '        1 !== 2',
      "      code: 'ERR_ASSERTION'",
      '      stack: |-',
      '        error: not this one',
      '      ...',
      '    # Subtest: throws',
      '    not ok 2 - throws',
      '      ---',
      "      failureType: 'testCodeFailure'",
      "      error: 'it''s broken'",
      '      ...',
      '    1..2',
      'not ok 2 - group',
      '  ---',
      "  failureType: 'subtestsFailed'",
      "  error: '2 subtests failed'",
      '  ...',
      '# Subtest: skipped',
      'ok 3 - skipped # SKIP needs PostgreSQL 15',
      '# Subtest: /x.test.js',
      'not ok 4 - /x.test.js',
      '  ---',
      "  failureType: 'testCodeFailure'",
      "  error: 'test failed'",
      '  ...',
      '1..4',
      '# tests 5',
    ].join('\n')
    assert.deepEqual(parseTapFailures(tap), [
      { test: 'group › fails inner', error: 'one is not two' },
      { test: 'group › throws', error: "it's broken" },
      { test: '/x.test.js', error: 'test failed' },
    ])
  }
})
