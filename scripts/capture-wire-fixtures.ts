// Records what real PostgreSQL servers send for the pipegres/wire test cases
// (test/support/fixtures/wire-cases.ts), as Client.queryRaw() would forward it:
//
//   node build/scripts/capture-wire-fixtures.js [bin dir ...]
//
// (default: the embedded server; e.g. /usr/lib/postgresql/15/bin for another).
// Writes test/support/fixtures/wire-pg<major>.ts for each server.

import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer } from '../test/support/servers/postgres.js'
import { WireCapture } from '../test/support/codecs/wire-capture.js'
import { WIRE_CASES } from '../test/support/fixtures/wire-cases.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** Hex in lines of 120 characters, so a fixture diff shows which part changed. */
function hexLines(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex')
  const lines = hex.match(/.{1,120}/g) ?? ['']
  return lines.map((l) => `      '${l}'`).join(' +\n')
}

async function capture(binDir: string | undefined): Promise<void> {
  const server = await startServer(binDir ? { binDir, name: 'wire-fixtures' } : { name: 'wire-fixtures' })
  try {
    const session = await WireCapture.open({ path: `${server.socketDir}/.s.PGSQL.${server.port}` }, server.users.trust.user, server.database)
    const entries: string[] = []
    for (const c of WIRE_CASES) {
      if (c.minVersion !== undefined && server.version < c.minVersion) continue
      for (const s of c.setup ?? []) await session.exec(s)
      const forms: string[] = []
      for (const format of c.formats ?? ['text', 'binary']) {
        const bytes = c.protocol === 'simple' ? await session.simple(c.sql) : await session.extended(c.sql, format)
        forms.push(`    '${format}':\n${hexLines(bytes)},`)
      }
      await session.exec('DISCARD ALL')
      entries.push(`  ${JSON.stringify(c.name)}: {\n    sql: ${JSON.stringify(c.sql)},\n${forms.join('\n')}\n  },`)
    }
    await session.close()
    const version = server.versionString.replace(/^postgres \(PostgreSQL\)\s*/, '')
    const file = join(root, 'test', 'support', 'fixtures', `wire-pg${server.version}.ts`)
    const text = [
      `// Recorded from PostgreSQL ${version} by scripts/capture-wire-fixtures.ts: do not edit.`,
      '',
      "import type { WireFixtures } from './wire-fixture-types.js'",
      '',
      `export const version = ${server.version}`,
      '',
      'export const fixtures: WireFixtures = {',
      ...entries,
      '}',
      '',
    ].join('\n')
    writeFileSync(file, text)
    console.log(`wrote ${file}`)
  } finally {
    await server.stop()
  }
}

const dirs = process.argv.slice(2)
for (const dir of dirs.length > 0 ? dirs : [undefined]) await capture(dir)
