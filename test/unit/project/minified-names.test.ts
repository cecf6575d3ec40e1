// test-tags: slow
// An application's minifier renames classes (esbuild --minify, wrangler's
// `minify`, Vite's production build), so an error's `name` must not come from
// its constructor's: every error class an entry exports, bundled and minified
// as an application ships it, still reads as itself in `err.name`, in
// `String(err)` and in a stack's first line.

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { bundle } from '../../../scripts/bundle-size.js'

const here = dirname(fileURLToPath(import.meta.url))
// Compiled to build/test/unit; the package's modules are build/src (the same code as dist/).
const built = join(here, '..', '..', '..', 'src')

// pg's DatabaseError is named after the protocol message it came from, as pg names it.
const named: Record<string, string> = { DatabaseError: 'error' }

for (const entry of ['index.js', 'replication.js', 'wire/index.js', 'integrations/pg/index.js', 'integrations/postgres/index.js']) {
  test(`error classes keep their names in a minified bundle of ${entry}`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pipegres-minified-'))
    try {
      const outfile = join(dir, 'bundle.mjs')
      await bundle(join(built, entry), 'node', { outfile })
      const mod = (await import(pathToFileURL(outfile).href)) as Record<string, unknown>
      const errors = Object.entries(mod).filter(([, v]) => typeof v === 'function' && v.prototype instanceof Error) as [string, new (...args: never[]) => Error][]
      assert.ok(errors.length > 0, `${entry} exports no error class`)
      for (const [exported, C] of errors) {
        // The minifier did rename the class, or this test proves nothing for it.
        assert.notEqual(C.name, exported, `${exported} kept its class name in the minified bundle`)
        // A class names itself on its prototype (a getter), or in its constructor (`this.name = ...`).
        let name = (Object.create(C.prototype) as Error).name
        if (name === 'Error') name = new (C as unknown as new (message: string) => Error)('a message').name
        assert.equal(name, named[exported] ?? exported, `${exported} reads as ${name} once minified`)
      }
      if (entry === 'index.js') {
        const { ConnectionError } = mod as { ConnectionError: new (code: string, message: string) => Error }
        const err = new ConnectionError('PG_CONNECTION_CLOSED', 'the server closed the connection')
        assert.equal(String(err), 'ConnectionError: the server closed the connection')
        assert.match(err.stack ?? '', /^ConnectionError: the server closed the connection\n/)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
}

test('the classes of dist/ keep the names they are exported by, which util.inspect and stacks show (npm run build)', async () => {
  const dist = join(here, '..', '..', '..', '..', 'dist')
  for (const entry of ['index.js', 'replication.js', 'wire/index.js', 'integrations/pg/index.js', 'integrations/postgres/index.js']) {
    const mod = (await import(pathToFileURL(join(dist, entry)).href)) as Record<string, unknown>
    const misnamed = Object.entries(mod)
      .filter(([exported, v]) => typeof v === 'function' && /^class\b/.test(Function.prototype.toString.call(v)) && v.name !== exported)
      .map(([exported, v]) => `${exported} is named ${(v as { name: string }).name}`)
    assert.deepEqual(misnamed, [], `dist/${entry}`)
  }
})
