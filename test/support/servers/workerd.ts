// Cloudflare's workerd (the `workerd` dev dependency) running one Worker for
// a test: the Worker bundled by esbuild as wrangler would (the `workerd`
// condition, cloudflare:* and node:* left to the runtime), a config in
// Cap'n Proto text, a free port, and a bounded wait until it answers.
// The Worker reaches only the loopback addresses (the `internet` service
// allows "local"), and trusts only the certificate authority it is given.

import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { repoRoot } from '../paths.js'

const root = repoRoot
const require = createRequire(join(root, 'package.json'))

/** A recent compatibility date this workerd supports: what a new Worker gets. */
export const COMPATIBILITY_DATE = '2026-11-01'
/**
 * The oldest date pipegres supports: nodejs_compat's second version (the
 * `process` and `Buffer` globals); timers are numbers, EventTarget listeners
 * get another `this`, and there is no node:os or node:fs.
 */
export const OLDEST_COMPATIBILITY_DATE = '2024-09-23'

/** The workerd binary of the dev dependency (its platform package), or why there is none. */
export function workerdBinary(): string {
  const pkg = `@cloudflare/workerd-${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch === 'x64' ? '64' : process.arch}`
  let path: string
  try {
    path = join(dirname(require.resolve(`${pkg}/package.json`)), 'bin', process.platform === 'win32' ? 'workerd.exe' : 'workerd')
  } catch {
    throw new Error(`${pkg} is not installed: workerd is a dev dependency (npm install), and its binary comes with the package for this platform`)
  }
  if (!existsSync(path)) throw new Error(`the workerd binary is missing from ${pkg} (${path})`)
  return path
}

export interface BundleResult {
  file: string
  /** esbuild's metafile: the inputs that made it into the bundle. */
  inputs: string[]
  bytes: number
}

/** Bundles a Worker as wrangler does: ESM, the `workerd` condition, the runtime's modules external. */
export async function bundleWorker(entry: string, outfile: string, options: { minify?: boolean } = {}): Promise<BundleResult> {
  const esbuild = (await import('esbuild')) as typeof import('esbuild')
  const result = await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    external: ['cloudflare:*', 'node:*'],
    minify: options.minify ?? false,
    metafile: true,
    logLevel: 'silent',
  })
  const out = Object.values(result.metafile.outputs)[0]!
  return { file: outfile, inputs: Object.keys(result.metafile.inputs), bytes: out.bytes }
}

/** A port nobody listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** A Cap'n Proto text string: JSON's escapes are a subset of capnp's for the ASCII text used here. */
const capnpString = (s: string): string => JSON.stringify(s)

/** The config; `embed` paths are relative to the config file, so the Worker sits beside it as worker.js. */
function config(port: number, trustedCertificates: string[], compatibilityDate: string): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "internet", network = (
      allow = ["local"],
      tlsOptions = (trustBrowserCas = false, trustedCertificates = [${trustedCertificates.map(capnpString).join(', ')}]),
    )),
  ],
  sockets = [(name = "http", address = ${capnpString(`127.0.0.1:${port}`)}, http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = ${capnpString(compatibilityDate)},
  compatibilityFlags = ["nodejs_compat"],
  globalOutbound = "internet",
);
`
}

export interface RunningWorker {
  url: string
  /** What workerd printed so far, for failure messages. */
  output(): string
  /** Sends `body` as JSON to `path`; resolves with the parsed JSON answer. */
  call(path: string, body: unknown, timeoutMs?: number): Promise<any>
  stop(): Promise<void>
}

const START_TIMEOUT_MS = 30_000

/** Starts workerd serving `workerFile` (an ES module bundle); resolves once it answers HTTP. */
export async function startWorker(workerFile: string, options: { trustedCertificates: string[]; compatibilityDate?: string }): Promise<RunningWorker> {
  const binary = workerdBinary()
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-workerd-'))
  const port = await freePort()
  const configFile = join(dir, 'config.capnp')
  copyFileSync(workerFile, join(dir, 'worker.js'))
  writeFileSync(configFile, config(port, options.trustedCertificates, options.compatibilityDate ?? COMPATIBILITY_DATE))
  let output = ''
  const child: ChildProcess = spawn(binary, ['serve', configFile, '--verbose'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d))
  let exited: string | undefined
  child.once('exit', (code, signal) => (exited = `workerd exited (${signal ?? code})`))
  child.once('error', (err) => (exited = `workerd could not start: ${err.message}`))
  const url = `http://127.0.0.1:${port}`

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await gone
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  }

  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (exited !== undefined) {
      await stop()
      throw new Error(`${exited} before it served requests:\n${output}`)
    }
    const up = await fetch(`${url}/`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(2000) }).then(
      (r) => r.status === 404,
      () => false,
    )
    if (up) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`workerd did not answer on ${url} within ${START_TIMEOUT_MS} ms:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }

  return {
    url,
    output: () => output,
    async call(path, body, timeoutMs = 30_000) {
      const r = await fetch(`${url}/${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) })
      const text = await r.text()
      try {
        return JSON.parse(text)
      } catch {
        throw new Error(`the Worker answered ${path} with ${r.status}: ${text.slice(0, 500)}\nworkerd:\n${output.slice(-4000)}`)
      }
    },
    stop,
  }
}
