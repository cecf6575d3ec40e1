// test-tags: matrix
// SCRAM with passwords outside ASCII against a real server: the server stores the
// verifier of pg_saslprep()'s output, so the client must prepare the password the same
// way (src/auth/saslprep.ts, loaded only for such a password), and a password SASLprep
// refuses is used as it is on both sides.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { PgError } from '../../../src/index.js'
import { adminQuery, getTestServer } from '../../support/servers/test-server.js'
import { connectError, session, tcpOptions, withClient } from '../../support/connect.js'
import { uniqueName } from '../../support/client.js'

const server = await getTestServer()
const sqlLiteral = (s: string) => `'${s.replaceAll("'", "''")}'`

// Each: the password the role is given, and what else logs in as it (SASLprep maps them to the same string).
const CASES: { name: string; password: string; alsoLogsIn: string[]; refused: string[] }[] = [
  // U+2168 ROMAN NUMERAL NINE normalises (NFKC) to "IX"; U+00A0 NO-BREAK SPACE maps to a space.
  { name: 'NFKC and a non-ASCII space', password: 'IX-\u2168\u00a0pw', alsoLogsIn: ['IX-IX pw'], refused: ['IX-IX\u00a0pwx'] },
  // U+00AD SOFT HYPHEN is mapped to nothing.
  { name: 'a character mapped to nothing', password: 'pass\u00adword\u00e9', alsoLogsIn: ['password\u00e9'], refused: ['password'] },
  // U+E000, private use, is prohibited: SASLprep refuses the password, and both sides use it as it is.
  { name: 'a prohibited character (the password is used as it is)', password: 'x\ue000y', alsoLogsIn: [], refused: ['xy'] },
]

const roles: string[] = []
before(async () => {
  for (const c of CASES) {
    const role = uniqueName('saslprep')
    roles.push(role)
    await adminQuery(`CREATE ROLE ${role} LOGIN PASSWORD ${sqlLiteral(c.password)}`)
  }
})
after(async () => {
  for (const role of roles) await adminQuery(`DROP ROLE IF EXISTS ${role}`)
})

CASES.forEach((c, i) => {
  test(`SCRAM-SHA-256 with ${c.name}`, async () => {
    const user = roles[i]!
    for (const password of [c.password, ...c.alsoLogsIn]) {
      await withClient(tcpOptions(server, { user, password }, { sslmode: 'disable' }), async (client) => {
        assert.deepEqual(await session(client), { user, ssl: false })
      })
    }
    for (const password of c.refused) {
      const err = await connectError(tcpOptions(server, { user, password }, { sslmode: 'disable' }))
      assert.ok(err instanceof PgError && err.code === '28P01', String(err))
    }
  })
})
