// Where the repository is, for tests that read its files (README.md, src/,
// the fixtures) or start its scripts: worked out once, here, so that a test's
// depth under test/ never enters a path. This file compiles to
// build/test/support/paths.js.

import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's root: README.md, package.json, src/, test/. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

/** Where `npm run build:all` compiles everything to: build/src, build/test, build/scripts. */
export const buildDir = join(repoRoot, 'build')
