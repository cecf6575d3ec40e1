// test-tags: slow
// pipegres in Cloudflare's workerd: a Worker (test/support/fixtures/workers-app.ts) bundled by
// esbuild for the Workers target, served by the `workerd` dev dependency with
// nodejs_compat, connecting to the test server through cloudflare:sockets.
// Plain TCP, pipelining, server errors, transactions, COPY both ways,
// LISTEN/NOTIFY, cancellation (a second socket), SCRAM and MD5, TLS through
// startTls with sslmode require and verify-full (the Worker's network trusts
// the test server's CA), a pool per request ended by ctx.waitUntil, and the
// settings a Worker cannot honour refused with a ConfigError.

import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { adminQuery, connectionUrl, getTestServer } from '../../support/servers/test-server.js'
import { bundleWorker, OLDEST_COMPATIBILITY_DATE, startWorker, type RunningWorker } from '../../support/servers/workerd.js'

const here = dirname(fileURLToPath(import.meta.url))
// Compiled to build/test/integration; the Worker's compiled source beside it.
const appEntry = join(here, '..', '..', 'support', 'fixtures', 'workers-app.js')

const server = await getTestServer()
const { users } = server
const url = (who: { user: string; password?: string }, params: Record<string, string>, host?: string): string =>
  connectionUrl(server, who, { params, ...(host === undefined ? {} : { host }) })
const plain = url(server.superuser, { sslmode: 'disable' })

let worker: RunningWorker
let dir: string
let bundleFile: string
const trustedCertificates = [readFileSync(server.tls.caFile, 'utf8')]

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pipegres-worker-'))
  const bundle = await bundleWorker(appEntry, join(dir, 'worker.js'))
  // The Workers entry leaves Node's transport out: the bundle must not contain it.
  for (const nodeOnly of ['node-socket.js', 'pgpass.js', 'tls-options.js', 'node-platform.js', 'node-system.js']) {
    assert.ok(!bundle.inputs.some((f) => f.endsWith(`/${nodeOnly}`)), `the Worker bundle contains ${nodeOnly}`)
  }
  bundleFile = bundle.file
  worker = await startWorker(bundle.file, { trustedCertificates })
})

after(async () => {
  await worker?.stop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

/** Runs a scenario; fails with the Worker's error and workerd's output when there is no result. */
async function run(name: string, input: Record<string, unknown>, on: RunningWorker = worker): Promise<any> {
  const answer = await on.call(name, input)
  assert.ok('result' in answer, `${name} failed in the Worker: ${JSON.stringify(answer.error)}\nworkerd:\n${on.output().slice(-3000)}`)
  return answer.result
}

describe('pipegres in Cloudflare Workers (workerd)', () => {
  test('plain TCP through cloudflare:sockets: a query, its types, an unencrypted session', async () => {
    const r = await run('plain', { url: plain })
    assert.deepEqual(r, { tls: false, two: 2, big: '9007199254740993', at: '2024-02-29T12:00:00.000Z', session: { user: 'postgres', ssl: false } })
  })

  test('pipelining: 200 queries at once, and 4 MiB each way across backpressure', async () => {
    assert.deepEqual(await run('pipeline', { url: plain }), { answered: 200, bigLength: 4 * 1024 * 1024 })
  })

  test('a server error fails its own query with its SQLSTATE; its neighbours succeed', async () => {
    const r = await run('error', { url: plain })
    assert.deepEqual(r.before, { a: 1 })
    assert.deepEqual(r.after, { c: 3 })
    assert.equal(r.error.name, 'PgError')
    assert.equal(r.error.code, '22012')
  })

  test('transactions: a commit, and a rollback when the function throws', async () => {
    assert.deepEqual(await run('transaction', { url: plain }), { rows: [1, 2], rolledBack: true })
  })

  test('COPY both ways: rows and raw text in, raw text and decoded rows out', async () => {
    assert.deepEqual(await run('copy', { url: plain }), {
      copiedIn: [2, 1],
      text: '1\tone\n2\ttwo\n3\tthree\n',
      rows: [
        [1, 'one'],
        [2, 'two'],
        [3, 'three'],
      ],
    })
  })

  test('LISTEN/NOTIFY', async () => {
    assert.deepEqual(await run('listen', { url: plain }), { payload: 'hello from a Worker' })
  })

  for (const [label, sslmode] of [
    ['plain TCP', 'disable'],
    ['TLS', 'require'],
  ] as const) {
    test(`cancellation over ${label}: a signal and a timeout each cancel pg_sleep through a second socket`, async () => {
      const r = await run('cancel', { url: url(server.superuser, { sslmode }, 'localhost') })
      const seen = JSON.stringify(r)
      assert.equal(r.aborted.name, 'AbortError', seen)
      assert.equal(r.aborted.causeCode, '57014', `the server cancelled the statement: ${seen}`)
      assert.equal(r.timedOut.isTimeout, true, seen)
      assert.equal(r.timedOut.causeCode, '57014', seen)
      assert.deepEqual(r.after, { ok: 1 })
      assert.ok(r.ms < 10_000, `cancelling took ${r.ms} ms`)
    })
  }

  test('SCRAM-SHA-256 and MD5 authentication (node:crypto of nodejs_compat)', async () => {
    const scram = await run('session', { url: url(users.scram, { sslmode: 'disable' }) })
    assert.deepEqual(scram, { tls: false, session: { user: users.scram.user, ssl: false } })
    const md5 = await run('session', { url: url(users.md5, { sslmode: 'disable' }) })
    assert.deepEqual(md5, { tls: false, session: { user: users.md5.user, ssl: false } })
    const wrong = await run('refused', { url: url({ user: users.scram.user, password: 'not the password' }, { sslmode: 'disable' }) })
    assert.equal(wrong.error.name, 'PgError')
    assert.equal(wrong.error.code, '28P01')
  })

  test('sslmode=require: TLS through startTls, SCRAM inside it (a hostssl-only user)', async () => {
    const r = await run('session', { url: url(users.sslOnly, { sslmode: 'require' }, 'localhost') })
    assert.deepEqual(r, { tls: true, session: { user: users.sslOnly.user, ssl: true } })
  })

  test('sslmode=verify-full: the certificate is checked against the host name', async () => {
    const ok = await run('session', { url: url(users.scram, { sslmode: 'verify-full' }, 'localhost') })
    assert.deepEqual(ok, { tls: true, session: { user: users.scram.user, ssl: true } })
    // The server certificate names localhost only.
    const wrongName = await run('refused', { url: url(users.scram, { sslmode: 'verify-full' }, '127.0.0.1') })
    assert.equal(wrongName.connected, false)
    assert.equal(wrongName.error.code, 'PG_TLS', JSON.stringify(wrongName.error))
  })

  test('the Cloudflare transport by name (pipegres/cloudflare) through the stream option', async () => {
    const r = await run('explicit', { url: url(users.scram, { sslmode: 'verify-full' }, 'localhost') })
    assert.deepEqual(r, { tls: true, session: { user: users.scram.user, ssl: true } })
  })

  test('a pool per request, ended after the response by ctx.waitUntil(pool.end())', async () => {
    const r = await run('pool', { url: plain })
    assert.ok(r.connections >= 1 && r.connections <= 3, `${r.connections} connections`)
    assert.equal(r.level, 'read committed')
    // waitUntil keeps the Worker running until the pool has closed its connections.
    const deadline = Date.now() + 10_000
    let open = -1
    while (Date.now() < deadline) {
      const res = await adminQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pipegres_workers_pool'")
      open = Number(res.rows[0]![0])
      if (open === 0) break
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal(open, 0, 'the pool closed its connections after the response')
  })

  test(`the oldest compatibility date with nodejs_compat v2 (${OLDEST_COMPATIBILITY_DATE}): queries, TLS and cancellation`, async () => {
    // Its timers have no unref(), its EventTarget calls listeners with another `this`, and it has no node:os.
    const old = await startWorker(bundleFile, { trustedCertificates, compatibilityDate: OLDEST_COMPATIBILITY_DATE })
    try {
      assert.equal((await run('plain', { url: plain }, old)).two, 2)
      const tls = await run('session', { url: url(users.scram, { sslmode: 'verify-full' }, 'localhost') }, old)
      assert.deepEqual(tls, { tls: true, session: { user: users.scram.user, ssl: true } })
      const cancel = await run('cancel', { url: plain }, old)
      assert.equal(cancel.aborted.causeCode, '57014', JSON.stringify(cancel))
      assert.equal(cancel.timedOut.causeCode, '57014', JSON.stringify(cancel))
    } finally {
      await old.stop()
    }
  })

  describe('settings a Worker cannot honour are refused, naming the setting', () => {
    const cases: [string, Record<string, string>, string | undefined, string, RegExp][] = [
      ['an sslrootcert file', { sslmode: 'verify-full', sslrootcert: server.tls.caFile }, 'localhost', 'sslrootcert', /trust store/],
      ['a unix-socket host', { sslmode: 'disable' }, server.socketDir, 'host', /unix-socket/],
      ['direct TLS', { sslmode: 'require', sslnegotiation: 'direct' }, 'localhost', 'sslnegotiation', /ALPN/],
      ['a client certificate', { sslmode: 'require', sslcert: '/client.crt', sslkey: '/client.key' }, 'localhost', 'sslcert', /certificate/],
      ['hostaddr with TLS', { sslmode: 'require', hostaddr: '127.0.0.1' }, 'localhost', 'hostaddr', /certificate/],
    ]
    for (const [label, params, host, setting, message] of cases) {
      test(label, async () => {
        const r = await run('refused', { url: url(users.scram, params, host) })
        assert.equal(r.connected, false)
        assert.equal(r.error.name, 'ConfigError', JSON.stringify(r.error))
        assert.equal(r.error.setting, setting)
        assert.match(r.error.message, message)
      })
    }
  })
})
