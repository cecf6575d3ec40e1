// A small web server for the browser-table example: the page, the
// pipegres/wire parser as an ES module, and report endpoints that stream a
// query's result to the browser as PostgreSQL's own protocol messages
// (queryRaw), which the page decodes with pipegres/wire as they arrive.
//
//   npm run build && npm run build:all
//   DATABASE_URL=postgres://... node build/examples/browser-table/server.js
//
// then open http://localhost:8080/ (PORT sets another port).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createPool, PgError, type PoolOptions } from '../../src/index.js'

export interface Report {
  title: string
  sql: string
  /** The query's parameters, from the request's query string. */
  values(query: URLSearchParams): unknown[]
}

/**
 * The queries the page can run. The browser picks one by name and never sends
 * SQL: an endpoint that ran any SQL it was given would hand the database to
 * anyone who can reach the page.
 */
export const REPORTS: Record<string, Report> = {
  people: {
    title: 'A few rows of many types',
    sql: `SELECT * FROM (VALUES
        (1, 'Ada Lovelace', 'ada@example.com', 1815::int8, 12.50::numeric(10, 2), true, '1815-12-10'::date,
         '2024-02-29 12:34:56.789+00'::timestamptz, '{"tags": ["math", "poetry"]}'::jsonb, ARRAY[1, 2, 3],
         '\\x00ff'::bytea, interval '1 year 2 mons', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 3.5::float8, point(1, 2)),
        (2, 'Grace Hopper', NULL, 1906, NULL, false, '1906-12-09', NULL, '{"ships": 0}', ARRAY[NULL, 5]::int4[],
         NULL, interval '-3 days 04:05:06', NULL, 'NaN', NULL),
        (3, 'Zoë 李 🚀', 'zoë@example.com', 9007199254740993, -0.001, NULL, 'infinity', '1970-01-01 00:00:00+00',
         '[1, "two", {"three": 3}]', '{}', '\\x', interval '0', NULL, '-Infinity', point(-1.5, 0))
      ) AS t(id, name, email, born, balance, active, since, seen, profile, scores, avatar, age, ref, ratio, location)`,
    values: () => [],
  },
  series: {
    title: 'Many rows (?count=, default 5000, at most 100000)',
    sql: `SELECT n, 'row ' || n AS label, n % 3 = 0 AS fizz, CASE WHEN n % 5 = 0 THEN NULL ELSE n * 1.5 END AS half,
        '2024-01-01 00:00:00+00'::timestamptz + n * interval '1 minute' AS at, md5(n::text) AS hash, repeat('é', n % 4) AS accents
      FROM generate_series(1, $1::int) AS n`,
    values: (q) => {
      const n = Number(q.get('count') ?? 5000)
      return [Number.isInteger(n) ? Math.min(Math.max(n, 0), 100_000) : 5000]
    },
  },
  failing: {
    title: 'A query that fails after two rows',
    sql: 'SELECT n, 10 / (3 - n) AS quotient FROM generate_series(1, 5) AS n',
    values: () => [],
  },
}

export interface BrowserTableOptions {
  /** Where the database is: a connection string or pool options (default: the PG* variables, as libpq reads them). */
  database?: string | PoolOptions
  /** Default 0: any free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
}

export interface BrowserTableServer {
  /** The page's address, e.g. http://127.0.0.1:8080/ */
  url: string
  port: number
  /** Stops accepting requests, closes open connections and the database pool. */
  close(): Promise<void>
}

const here = dirname(fileURLToPath(import.meta.url))

/** The first directory that holds `file`, or throws naming them all. */
function findDir(candidates: string[], file: string, what: string): string {
  const found = candidates.find((dir) => existsSync(join(dir, file)))
  if (found === undefined) throw new Error(`${what} not found in ${candidates.join(', ')}`)
  return found
}

function repositoryRoot(): string {
  let dir = here
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir)
    if (up === dir) throw new Error('package.json not found above ' + here)
    dir = up
  }
  return dir
}

const PAGE_HEADERS = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'",
}

function send(res: ServerResponse, status: number, type: string, body: string | Uint8Array): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) })
  res.end(body)
}

export async function startBrowserTableServer(options: BrowserTableOptions = {}): Promise<BrowserTableServer> {
  const root = repositoryRoot()
  // The page's files stay in the source tree; tsc compiles only this server.
  const pageDir = findDir([here, resolve(root, 'examples', 'browser-table')], 'index.html', 'index.html')
  // The parser as published (npm run build), or as compiled with everything else.
  const wireDir = findDir([join(root, 'dist', 'wire'), join(root, 'build', 'src', 'wire')], 'index.js', 'the compiled pipegres/wire (run npm run build)')
  const pool = createPool(options.database)

  async function serveReport(name: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
    const report = REPORTS[name]
    if (report === undefined) return send(res, 404, 'text/plain; charset=utf-8', `no report named ${name}`)
    // Headers go out with the first bytes: until then a failure can still be a 500.
    res.setHeader('Content-Type', 'application/octet-stream')
    res.setHeader('Cache-Control', 'no-store')
    res.setHeader('X-Content-Type-Options', 'nosniff')
    try {
      await pool.queryRaw(report.sql, report.values(query), res, { format: 'binary' })
      res.end()
    } catch (err) {
      if (err instanceof PgError && res.headersSent) {
        // The server's ErrorResponse is in the stream: the page shows it.
        res.end()
      } else if (!res.headersSent) {
        send(res, 500, 'text/plain; charset=utf-8', `the query could not run: ${(err as Error).message}`)
      } else {
        // Cut off mid-result: destroying the response makes the page see an incomplete stream, not a short table.
        res.destroy(err as Error)
      }
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (req.method !== 'GET') return send(res, 405, 'text/plain; charset=utf-8', 'GET only')
    if (url.pathname === '/') return send(res, 200, 'text/html; charset=utf-8', await readFile(join(pageDir, 'index.html')))
    if (url.pathname === '/app.js') return send(res, 200, 'text/javascript; charset=utf-8', await readFile(join(pageDir, 'app.js')))
    // pipegres/wire loads what it shares with the other entries from chunks/ beside its folder (the
    // package's bundles, dist/), or the browser-safe protocol/ and types/ modules and errors.js (build/src).
    const module = /^\/(?:(?:wire|protocol|types|types\/codecs)\/[a-z0-9-]+|chunks\/[A-Za-z0-9_-]+|errors)\.js$/.exec(url.pathname)
    if (module && existsSync(join(dirname(wireDir), url.pathname))) {
      return send(res, 200, 'text/javascript; charset=utf-8', await readFile(join(dirname(wireDir), url.pathname)))
    }
    const data = /^\/data\/([a-z-]+)$/.exec(url.pathname)
    if (data) return serveReport(data[1]!, url.searchParams, res)
    send(res, 404, 'text/plain; charset=utf-8', 'not found')
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', err.message)
      else res.destroy(err)
    })
  })
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolveListen())
  })
  const { address, port } = server.address() as AddressInfo
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/`,
    port,
    close: async () => {
      await new Promise<void>((r) => {
        server.close(() => r())
        server.closeAllConnections()
      })
      await pool.end()
    },
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const running = await startBrowserTableServer({
    database: process.env.DATABASE_URL,
    port: Number(process.env.PORT ?? 8080),
    host: process.env.HOST ?? '127.0.0.1',
  })
  console.log(`browser-table example on ${running.url}`)
  const stop = () => {
    void running.close().then(() => process.exit(0))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
