import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { repoRoot as root } from '../../support/paths.js'

// pipegres/wire runs in browsers, so everything its entry reaches must compile
// against the DOM library alone: a `node:` import, Buffer or process anywhere
// in that graph (src/wire/ or the protocol/ and types/ code it reuses) fails
// here with the compiler's own messages.

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const domConfig = join(root, 'tsconfig.wire-dom.json')

function compile(project: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [tsc, '-p', project, '--noEmit', '--pretty', 'false'], { cwd: root, encoding: 'utf8' })
  if (r.error) throw r.error
  return { status: r.status, output: `${r.stdout}${r.stderr}`.trim() }
}

test('the pipegres/wire entry compiles against the DOM library without Node types', () => {
  const { status, output } = compile(domConfig)
  assert.equal(status, 0, `tsc -p tsconfig.wire-dom.json reports:\n${output}`)
})

test('the DOM build itself refuses Node-only code', () => {
  // Guards against a configuration that would let Node types in (an inherited
  // "types": ["node"], say) and so pass whatever the entry imports.
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-wire-dom-'))
  try {
    writeFileSync(join(dir, 'probe.ts'), "import { Buffer } from 'node:buffer'\nexport const bytes: Uint8Array = Buffer.from('x')\nexport const argv: string[] = process.argv\n")
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: domConfig, files: ['probe.ts'] }))
    const { status, output } = compile(join(dir, 'tsconfig.json'))
    assert.notEqual(status, 0, 'a node: import compiled in the DOM build')
    assert.match(output, /node:buffer/)
    assert.match(output, /process/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
