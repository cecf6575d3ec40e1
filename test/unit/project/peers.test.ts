import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../../support/paths.js'
import { PEER_GROUPS } from '../../support/peers/plan.js'
import { compareReleases, satisfies } from '../../support/peers/semver.js'
import { packageOf } from '../../support/peers/swap.js'

// `npm run test:peers` (scripts/test-peers.ts): its plan covers every peer
// dependency, each range is closed above, and the range reading it relies on
// agrees with npm's on the forms package.json and the peers' own manifests use.

const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<'peerDependencies' | 'devDependencies', Record<string, string>>

test('every peer dependency is in the plan, with a range closed above, and every swapped package has a range', () => {
  const planned = PEER_GROUPS.filter((g) => g.rangesFrom === 'peerDependencies').flatMap((g) => g.packages)
  assert.deepEqual([...planned].sort(), Object.keys(manifest.peerDependencies).sort())
  for (const [name, range] of Object.entries(manifest.peerDependencies)) assert.match(range, /^>=\d+\.\d+\.\d+ <\d+\.\d+\.\d+$/, `${name}: ${range}`)
  for (const g of PEER_GROUPS) for (const name of g.packages) assert.ok(manifest[g.rangesFrom][name], `${g.label}: ${name} has no entry in ${g.rangesFrom}`)
  // The dev dependency, what `npm test` runs, is inside the peer range.
  for (const [name, range] of Object.entries(manifest.peerDependencies)) {
    const dev = manifest.devDependencies[name]?.replace(/^\^/, '')
    assert.ok(dev !== undefined && satisfies(dev, range), `${name}: dev dependency ${String(dev)} outside ${range}`)
  }
})

test("each group's test filters match test files", () => {
  const files: string[] = []
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) walk(path)
      else if (e.name.endsWith('.test.ts')) files.push(path.slice(repoRoot.length + 1).split('\\').join('/'))
    }
  }
  walk(join(repoRoot, 'test'))
  for (const g of PEER_GROUPS) for (const filter of g.tests) assert.ok(files.some((f) => f.includes(filter)), `${g.label}: no test file matches ${filter}`)
  assert.ok(existsSync(join(repoRoot, 'scripts', 'test-peers.ts')))
})

test('ranges: comparators, carets, tildes, x-ranges, hyphens and alternatives as npm reads them', () => {
  const cases: Array<[version: string, range: string, expected: boolean]> = [
    ['0.4.0', '>=0.4.0 <0.6.0', true],
    ['0.5.17', '>=0.4.0 <0.6.0', true],
    ['0.6.0', '>=0.4.0 <0.6.0', false],
    ['0.3.9', '>=0.4.0 <0.6.0', false],
    ['1.9.0', '>=1.3.0 <1.10.0', true],
    ['1.10.0', '>=1.3.0 <1.10.0', false],
    ['20.20.2', '^18.19.0 || >=20.6.0', true],
    ['20.5.0', '^18.19.0 || >=20.6.0', false],
    ['18.20.0', '^18.19.0 || >=20.6.0', true],
    ['20.20.2', '>=22.0.0', false],
    ['22.23.3', '>=22.15.0', true],
    ['0.28.5', '^0.28.0', true],
    ['0.29.0', '^0.28.0', false],
    ['0.0.3', '^0.0.3', true],
    ['0.0.4', '^0.0.3', false],
    ['1.4.0', '^1.2', true],
    ['2.0.0', '^1.2', false],
    ['1.2.9', '~1.2.3', true],
    ['1.3.0', '~1.2.3', false],
    ['7.5.2', '~7.5.0', true],
    ['8.1.0', '8.x', true],
    ['9.0.0', '8', false],
    ['3.0.0', '*', true],
    ['3.0.0', '', true],
    ['2.3.4', '1.2.3 - 2.3.4', true],
    ['2.3.5', '1.2.3 - 2.3.4', false],
    ['1.3.0', '>1.2', true],
    ['1.2.9', '>1.2', false],
    ['1.2.9', '<=1.2', true],
    ['1.3.0', '<=1.2', false],
    ['1.0.0-beta.1', '>=0.0.0', false],
  ]
  for (const [version, range, expected] of cases) assert.equal(satisfies(version, range), expected, `${version} in ${JSON.stringify(range)}`)
  assert.throws(() => satisfies('1.0.0', '>=1.0.0-rc.1'), /cannot read the range/)
  assert.deepEqual(['0.10.0', '0.9.1', '0.9.0', '1.0.0'].sort(compareReleases), ['0.9.0', '0.9.1', '0.10.0', '1.0.0'])
})

test('the package a bare specifier names', () => {
  assert.equal(packageOf('kysely'), 'kysely')
  assert.equal(packageOf('kysely/migration'), 'kysely')
  assert.equal(packageOf('@prisma/client/runtime/client'), '@prisma/client')
  assert.equal(packageOf('./x.js'), undefined)
  assert.equal(packageOf('node:fs'), undefined)
  assert.equal(packageOf('file:///a/b.js'), undefined)
})
