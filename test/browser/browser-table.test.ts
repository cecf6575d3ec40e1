// test-tags: slow
// test-needs: chromium
import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startBrowserTableServer, type BrowserTableServer } from '../../examples/browser-table/server.js'
import { getTestServer, mainDatabase } from '../support/servers/test-server.js'
import { WireCapture } from '../support/codecs/wire-capture.js'

// The browser-table example in a real headless Chromium: the page fetches a
// report, pipegres/wire decodes the streamed protocol messages in the browser,
// and the table and status line must show exactly what the query returned.
//
// Chromium is looked for at PIPEGRES_CHROMIUM, /usr/bin/chromium and
// /usr/bin/chromium-browser. Without one the test is skipped, unless
// PIPEGRES_REQUIRE_BROWSER=1 (as in CI), which makes its absence a failure.

const CANDIDATES = [process.env.PIPEGRES_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => !!p)
const executable = CANDIDATES.find((p) => existsSync(p))
const required = process.env.PIPEGRES_REQUIRE_BROWSER === '1'
const missing = `no Chromium found (looked at ${CANDIDATES.join(', ')}); install Debian's chromium package or set PIPEGRES_CHROMIUM`

if (executable === undefined && required) {
  test('the browser test needs Chromium', () => {
    assert.fail(`${missing}; PIPEGRES_REQUIRE_BROWSER=1 makes this a failure`)
  })
}

// Required or not, the tests below cannot run without it: one clear failure (above) is enough.
const skip = executable === undefined ? missing : false

let browser: Browser
let site: BrowserTableServer
const pageErrors: string[] = []

before(async () => {
  if (executable === undefined) return
  const db = await mainDatabase()
  site = await startBrowserTableServer({ database: db.options.connectionString ? { connectionString: db.options.connectionString, max: 2 } : { max: 2 } })
  browser = await chromium.launch({
    executablePath: executable,
    headless: true,
    // No sandbox: CI runs as root, where Chromium refuses to start with one. The page is our own.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--disable-extensions'],
  })
})

after(async () => {
  await browser?.close()
  await site?.close()
})

async function open(query: string, bytesPerSecond?: number): Promise<Page> {
  const page = await browser.newPage()
  page.on('pageerror', (err) => pageErrors.push(err.message))
  if (bytesPerSecond !== undefined) {
    // On loopback a whole body can reach the page before its script reads any of it, as one chunk;
    // a network of realistic speed makes it arrive the way it would from a remote server.
    const cdp = await page.context().newCDPSession(page)
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 5, downloadThroughput: bytesPerSecond, uploadThroughput: -1 })
  }
  await page.goto(`${site.url}?${query}`)
  await page.waitForSelector('#status[data-state="done"], #status[data-state="error"], #status[data-state="failed"]', { timeout: 60_000 })
  return page
}

interface Rendered {
  state: string
  status: string
  data: Record<string, string>
  header: string[]
  types: string[]
  rows: string[][]
  nullCells: number
}

// Runs in the page; a string, because the tests are compiled without the DOM's types.
const READ_PAGE = `(() => {
  const status = document.getElementById('status')
  return {
    state: status.dataset.state ?? '',
    status: status.textContent ?? '',
    data: { ...status.dataset },
    header: Array.from(document.querySelectorAll('#results thead th'), (th) => th.firstChild?.textContent?.trim() ?? ''),
    types: Array.from(document.querySelectorAll('#results thead th small'), (s) => s.textContent ?? ''),
    rows: Array.from(document.querySelectorAll('#results tbody tr'), (tr) => Array.from(tr.children, (td) => td.textContent ?? '')),
    nullCells: document.querySelectorAll('#results td.null').length,
  }
})()`

async function rendered(page: Page): Promise<Rendered> {
  return (await page.evaluate(READ_PAGE)) as Rendered
}

test('a few rows of many types: header, values, NULLs and unicode as the query returns them', { skip }, async () => {
  const page = await open('report=people')
  const r = await rendered(page)
  assert.equal(r.state, 'done', r.status)
  assert.deepEqual(r.header, ['id', 'name', 'email', 'born', 'balance', 'active', 'since', 'seen', 'profile', 'scores', 'avatar', 'age', 'ref', 'ratio', 'location'])
  assert.deepEqual(r.rows, [
    [
      '1', 'Ada Lovelace', 'ada@example.com', '1815', '12.50', 'true', '1815-12-10', '2024-02-29T12:34:56.789Z',
      '{"tags":["math","poetry"]}', '[1,2,3]', '\\x00ff', 'P1Y2M', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '3.5', '(1,2)',
    ],
    ['2', 'Grace Hopper', 'NULL', '1906', 'NULL', 'false', '1906-12-09', 'NULL', '{"ships":0}', '[null,5]', 'NULL', 'P-3DT4H5M6S', 'NULL', 'NaN', 'NULL'],
    ['3', 'Zoë 李 🚀', 'zoë@example.com', '9007199254740993', '-0.001', 'NULL', 'infinity', '1970-01-01T00:00:00.000Z', '[1,"two",{"three":3}]', '[]', '\\x', 'PT0S', 'NULL', '-Infinity', '(-1.5,0)'],
  ])
  assert.equal(r.nullCells, 8)
  assert.equal(r.data.command, 'SELECT')
  assert.equal(r.data.rowCount, '3')
  assert.match(r.status, /^SELECT 3 · 3 rows · \d+ bytes in \d+ chunks$/)
  // The column types come from the RowDescription.
  assert.deepEqual(r.types.slice(0, 4), ['int4', 'text', 'text', 'int8'])
  assert.equal(r.types[14], 'oid 600')
  await page.close()
})

test('5,000 rows arrive in several chunks and every one is rendered', { skip }, async () => {
  const page = await open('report=series&count=5000', 256 * 1024)
  const r = await rendered(page)
  assert.equal(r.state, 'done', r.status)
  assert.equal(r.rows.length, 5000)
  assert.equal(r.data.rowCount, '5000')
  // Chromium's throttled network may hand the page a body in as few as two
  // reads: enough to show that rows split across chunks are put together.
  assert.ok(Number(r.data.chunks) >= 2, `the body (${r.data.bytes} bytes) came in ${r.data.chunks} chunks`)
  assert.deepEqual(r.header, ['n', 'label', 'fizz', 'half', 'at', 'hash', 'accents'])
  const start = Date.UTC(2024, 0, 1)
  for (const n of [1, 2, 3, 5, 999, 2500, 4999, 5000]) {
    const row = r.rows[n - 1]!
    const half = n % 5 === 0 ? 'NULL' : `${Math.floor((n * 3) / 2)}.${n % 2 === 1 ? 5 : 0}`
    assert.deepEqual(
      [row[0], row[1], row[2], row[3], row[4], row[6]],
      [String(n), `row ${n}`, String(n % 3 === 0), half, new Date(start + n * 60_000).toISOString(), 'é'.repeat(n % 4)],
      `row ${n}`,
    )
    assert.match(row[5]!, /^[0-9a-f]{32}$/)
  }
  assert.equal(r.nullCells, 1000)
  await page.close()
})

test('a query that fails mid-result shows the rows before it and the server\'s error', { skip }, async () => {
  const page = await open('report=failing')
  const r = await rendered(page)
  assert.equal(r.state, 'error')
  assert.equal(r.status, 'ERROR 22012: division by zero')
  assert.equal(r.data.code, '22012')
  assert.deepEqual(r.rows, [
    ['1', '5'],
    ['2', '10'],
  ])
  await page.close()
})

test('a stream cut off inside a result is reported as a failure, not shown as a short table', { skip }, async () => {
  // Real bytes of a result, served without their last message (the CommandComplete).
  const server = await getTestServer()
  const capture = await WireCapture.open({ path: `${server.socketDir}/.s.PGSQL.${server.port}` }, server.users.trust.user, server.database)
  const whole = await capture.extended(`SELECT n, 'row ' || n AS label FROM generate_series(1, 3) AS n`, 'binary')
  await capture.close()
  const cut = whole.subarray(0, whole.length - 14)
  const page = await browser.newPage()
  page.on('pageerror', (err) => pageErrors.push(err.message))
  await page.route('**/data/series*', (route) => route.fulfill({ status: 200, contentType: 'application/octet-stream', body: Buffer.from(cut) }))
  await page.goto(`${site.url}?report=series`)
  await page.waitForSelector('#status[data-state="failed"]', { timeout: 60_000 })
  const r = await rendered(page)
  assert.match(r.status, /^Failed: the stream ended inside a result: a RowDescription and 3 rows, but no CommandComplete or ErrorResponse$/)
  await page.close()
})

test('an unknown report is an HTTP error the page reports', { skip }, async () => {
  const page = await open('report=nope')
  const r = await rendered(page)
  assert.equal(r.state, 'failed')
  assert.equal(r.status, 'Failed: HTTP 404 Not Found: no report named nope')
  await page.close()
})

test('no page errors', { skip }, () => {
  assert.deepEqual(pageErrors, [])
})
