// A scripted PostgreSQL backend in the test's own process, reached through the
// client's public `stream` option: no server, no socket, no port. Each
// connection the client opens plays one script, a list of steps: expect a
// frontend message (its type, and fields of its parsed body), send backend
// messages (built with ./backend-messages.ts), wait until the client has
// pipelined N messages, close or fail the stream. A message that does not
// match fails the test with the script laid beside what the client sent;
// every wait is bounded, so a client that stops talking fails, never hangs.
//
// fake-server.ts plays the server over TCP, for what needs a real socket
// (TLS, a port to dial); this one is for message-level tests of the query,
// lane and pool layers, where the order of what is written and read is the
// whole point and timing must not matter.

import { isDeepStrictEqual } from 'node:util'
import type { ByteStream, ClientOptions, StreamTarget } from '../../../src/index.js'
import { startupOk } from './backend-messages.js'
import { describeFrontend, fieldsOf, showExpected, type FrontendMessage, type FrontendType, type StartupPacket } from './frontend-messages.js'
import { ScriptedStream } from './scripted-stream.js'

/** A field of an expected message: a value (compared deeply), a pattern for a string, or a predicate. */
export type FieldCheck = unknown

export type Step =
  | { kind: 'expect'; type: FrontendType; fields: Record<string, FieldCheck> }
  | { kind: 'send'; bytes: Uint8Array }
  | { kind: 'pipelined'; count: number }
  | { kind: 'block' }
  | { kind: 'drain' }
  | { kind: 'close' }
  | { kind: 'fail'; message: string }
  | { kind: 'act'; label: string; fn: () => unknown }

/** One connection's part: its steps, and how it answers the startup packet. */
export interface Script {
  steps: readonly Step[]
  /** The backend pid in BackendKeyData; a plausible pid (at most 2^22) marks the connection as direct, not pooled. */
  pid?: number
  /** Bytes answering the startup packet in place of a trust startup (a FATAL, say). */
  startupReply?: Uint8Array
}

/** A connection attempt the stream factory refuses (the factory throws this message). */
export interface Refusal {
  refuse: string
}

export type ConnectionPlan = Script | readonly Step[] | Refusal

/** A script error: what was expected, what came, and the whole exchange so far. */
export class ScriptError extends Error {
  override name = 'ScriptError'
}

const BACKEND_NAMES: Record<string, string> = {
  R: 'Authentication',
  K: 'BackendKeyData',
  '2': 'BindComplete',
  '3': 'CloseComplete',
  C: 'CommandComplete',
  d: 'CopyData',
  c: 'CopyDone',
  G: 'CopyInResponse',
  H: 'CopyOutResponse',
  D: 'DataRow',
  I: 'EmptyQueryResponse',
  E: 'ErrorResponse',
  n: 'NoData',
  N: 'NoticeResponse',
  A: 'NotificationResponse',
  t: 'ParameterDescription',
  S: 'ParameterStatus',
  '1': 'ParseComplete',
  s: 'PortalSuspended',
  Z: 'ReadyForQuery',
  T: 'RowDescription',
}

/** The backend messages in `bytes`, by name, runs of one name counted (DataRow x3). */
function backendNames(bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const names: string[] = []
  for (let at = 0; at + 5 <= bytes.length; at += 1 + view.getInt32(at + 1)) {
    const letter = String.fromCharCode(bytes[at]!)
    let name = BACKEND_NAMES[letter] ?? `'${letter}'`
    if (letter === 'E' || letter === 'N') {
      // The SQLSTATE says which error it is.
      const body = new TextDecoder().decode(bytes.subarray(at + 5, at + 1 + view.getInt32(at + 1)))
      const code = body.split('\0').find((f) => f.startsWith('C'))
      if (code !== undefined) name += ` ${code.slice(1)}`
    }
    const last = names.length - 1
    const m = last >= 0 ? /^(.*?)(?: x(\d+))?$/.exec(names[last]!) : null
    if (m !== null && m[1] === name) names[last] = `${name} x${Number(m[2] ?? 1) + 1}`
    else names.push(name)
  }
  return names.join(', ')
}

function describeStep(step: Step): string {
  switch (step.kind) {
    case 'expect': {
      const fields = Object.entries(step.fields).map(([k, v]) => `${k}=${showExpected(v)}`)
      return `expect ${[step.type, ...fields].join(' ')}`
    }
    case 'send':
      return `send ${backendNames(step.bytes)}`
    case 'pipelined':
      return `wait for ${step.count} messages pipelined`
    case 'block':
      return 'stop taking writes (backpressure)'
    case 'drain':
      return 'drain'
    case 'close':
      return 'server closes the stream'
    case 'fail':
      return `stream fails: ${step.message}`
    case 'act':
      return step.label
  }
}

/** A field check passes: equal value, matching pattern, or a predicate that says yes. */
function fieldMatches(actual: unknown, expected: FieldCheck): boolean {
  if (expected instanceof RegExp) return typeof actual === 'string' && expected.test(actual)
  if (typeof expected === 'function') return (expected as (v: unknown) => boolean)(actual) === true
  return isDeepStrictEqual(actual, expected)
}

/** Why `m` is not what `step` expects, or null when it is. */
function mismatch(step: Extract<Step, { kind: 'expect' }>, m: FrontendMessage): string | null {
  if (m.type !== step.type) return `a ${step.type}, not a ${m.type}`
  const got = fieldsOf(m)
  const wrong = Object.entries(step.fields).filter(([k, v]) => !fieldMatches(got[k], v))
  if (wrong.length === 0) return null
  return wrong.map(([k, v]) => `${k} ${showExpected(v)}, not ${showExpected(got[k])}`).join('; ')
}

/** One connection the client opened, as the test sees it afterwards. */
export class ScriptedConnection {
  /** Every message the client sent on it, in order (Terminate included). */
  readonly received: FrontendMessage[] = []
  /** What each step of the script met: the message an expect matched, or nothing yet. */
  private readonly met: (string | null)[]
  private step = 0
  /** The script ran to its end: what the client sends from now on is checked by finished(). */
  ended = false
  /** Settles when the script has run to its end (or failed). */
  readonly done: Promise<void>

  constructor(
    readonly index: number,
    readonly script: Script,
    readonly stream: ScriptedStream,
    private readonly timeoutMs: number,
    private readonly report: (err: ScriptError) => void,
  ) {
    this.met = script.steps.map(() => null)
    this.done = this.run().catch((err: unknown) => {
      const e = err instanceof ScriptError ? err : new ScriptError(this.explain(`failed: ${(err as Error)?.message ?? String(err)}`))
      this.report(e)
      // The client learns of it as a broken stream, so that nothing waits on it.
      stream.finish(e)
    })
  }

  get startup(): StartupPacket | null {
    return this.stream.startup
  }

  /** Waits until `ready()` says yes or the client closes; each arrival re-checks it. Fails after the timeout with `what`. */
  private async until(ready: () => boolean, what: () => string): Promise<void> {
    const settled = (): boolean => ready() || this.stream.clientClosed
    if (settled()) return
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.stream.onChange = () => {}
        reject(new ScriptError(this.explain(`${what()} within ${this.timeoutMs} ms`)))
      }, this.timeoutMs)
      this.stream.onChange = () => {
        if (!settled()) return
        clearTimeout(timer)
        this.stream.onChange = () => {}
        resolve()
      }
    })
  }

  /** The next message the client sent, taken from the inbox. */
  private async next(what: string): Promise<FrontendMessage> {
    const inbox = this.stream.inbox
    await this.until(
      () => inbox.length > 0,
      () => `the client did not send ${what}`,
    )
    const m = inbox.shift()
    if (m === undefined) throw new ScriptError(this.explain(`the client closed the stream where the script expects ${what}`))
    this.received.push(m)
    return m
  }

  private async run(): Promise<void> {
    const { stream, script } = this
    await this.until(
      () => stream.startup !== null,
      () => 'the client sent no startup packet',
    )
    stream.deliver(script.startupReply ?? startupOk(script.pid ?? 1000 + this.index))
    for (; this.step < script.steps.length; this.step++) {
      const step = script.steps[this.step]!
      switch (step.kind) {
        case 'expect': {
          const m = await this.next(describeStep(step).slice('expect '.length))
          this.met[this.step] = describeFrontend(m)
          const wrong = mismatch(step, m)
          if (wrong !== null) throw new ScriptError(this.explain(`expected ${wrong}`))
          break
        }
        case 'send':
          stream.deliver(step.bytes)
          break
        case 'pipelined': {
          const inbox = stream.inbox
          await this.until(
            () => inbox.length >= step.count,
            () => `the client wrote ${inbox.length} of the ${step.count} messages expected before any reply`,
          )
          if (inbox.length < step.count) throw new ScriptError(this.explain(`the client closed the stream after ${inbox.length} of ${step.count} pipelined messages`))
          break
        }
        case 'block':
          stream.blocked = true
          break
        case 'drain':
          stream.drain()
          break
        case 'close':
        case 'fail':
          stream.finish(step.kind === 'fail' ? Object.assign(new Error(step.message), { code: 'ECONNRESET' }) : null)
          this.step++
          return
        case 'act': {
          let timer: NodeJS.Timeout | undefined
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new ScriptError(this.explain(`"${step.label}" did not finish within ${this.timeoutMs} ms`))), this.timeoutMs)
          })
          try {
            await Promise.race([Promise.resolve(step.fn()), late])
          } finally {
            clearTimeout(timer)
          }
          break
        }
      }
    }
    this.ended = true
  }

  /** Anything beyond the script but a Terminate is a failure. */
  checkNothingMore(): void {
    const extra = this.stream.inbox.splice(0)
    this.received.push(...extra)
    const unexpected = extra.filter((m) => m.type !== 'Terminate')
    if (unexpected.length > 0) throw new ScriptError(this.explain(`the client sent ${unexpected.length} message(s) past the script's end`, extra))
  }

  /** The failure message: the script step by step, each beside what it met, and what came after. */
  explain(what: string, after: readonly FrontendMessage[] = this.stream.inbox): string {
    const lines = [`connection ${this.index + 1}, step ${this.step + 1} of ${this.script.steps.length}: ${what}`]
    const width = Math.min(60, Math.max(20, ...this.script.steps.map((s) => describeStep(s).length)))
    this.script.steps.forEach((s, i) => {
      const mark = i < this.step ? '✓' : i === this.step ? '✗' : ' '
      const got = this.met[i]
      const text = describeStep(s)
      lines.push(`  ${mark} ${got === null ? text : `${text.padEnd(width)} | got ${got}`}`)
    })
    if (after.length > 0) lines.push('  sent by the client beyond that:', ...after.map((m) => `      ${describeFrontend(m)}`))
    return lines.join('\n')
  }
}

/** What run() ends or destroys once the test body is over: a Client, a Pool. */
export interface Closable {
  end(): Promise<void>
  destroy(reason?: Error): void
}

export interface BackendOptions {
  /** Bound of every wait of a script, and of end(); the test body gets four times as long. */
  timeoutMs?: number
}

/**
 * The backend behind one client or pool: the i-th connection opened plays the
 * i-th plan. A connection opened beyond the plans is refused and fails the test.
 */
export class ScriptedBackend {
  readonly connections: ScriptedConnection[] = []
  /** Errors of the scripts, in the order they happened. */
  readonly errors: ScriptError[] = []
  /** Cancel requests received (each comes on a stream of its own): the packet's code, and nothing else parsed. */
  readonly cancels: StartupPacket[] = []
  private opened = 0
  /** Rejects with the first script error, so that a test body waiting on the client stops at once. */
  private readonly firstError: Promise<never>
  private failFirst: (err: ScriptError) => void = () => {}
  private readonly plans: readonly ConnectionPlan[]
  readonly timeoutMs: number

  constructor(plans: readonly ConnectionPlan[], options: BackendOptions = {}) {
    this.plans = plans
    this.timeoutMs = options.timeoutMs ?? 1500
    this.firstError = new Promise<never>((_, reject) => (this.failFirst = reject))
    this.firstError.catch(() => {})
  }

  private report(err: ScriptError): void {
    this.errors.push(err)
    this.failFirst(err)
  }

  /** Connection options for a Client or Pool on this backend (add to them as needed). */
  get options(): ClientOptions & { stream: (t: StreamTarget) => ByteStream } {
    return {
      host: 'scripted',
      port: 5432,
      user: 'tester',
      database: 'test',
      sslmode: 'disable',
      // Idle checks would add messages no script expects.
      keepAlive: false,
      stream: (target) => this.open(target),
    }
  }

  private open(target: StreamTarget): ByteStream {
    const stream = new ScriptedStream()
    if (target.purpose === 'cancel') {
      stream.onChange = () => {
        if (stream.startup === null) return
        this.cancels.push(stream.startup)
        stream.finish(null)
      }
      return stream
    }
    const index = this.opened++
    const plan = this.plans[index]
    if (plan === undefined) {
      const err = new ScriptError(`the client opened connection ${index + 1}, but the test scripts ${this.plans.length}`)
      this.report(err)
      throw err
    }
    if ('refuse' in plan) throw new Error(plan.refuse)
    const script: Script = Array.isArray(plan) ? { steps: plan as readonly Step[] } : (plan as Script)
    this.connections.push(new ScriptedConnection(index, script, stream, this.timeoutMs, (e) => this.report(e)))
    return stream
  }

  /** Waits for every script to run to its end (each wait is bounded); the errors, with plans never opened. */
  async finished(): Promise<ScriptError[]> {
    await Promise.all(this.connections.map((c) => c.done))
    for (const c of this.connections) {
      if (!c.ended) continue
      try {
        c.checkNothingMore()
      } catch (err) {
        this.errors.push(err as ScriptError)
      }
    }
    const unused = this.plans.slice(this.opened)
    if (unused.length > 0) this.errors.push(new ScriptError(`the test scripts ${this.plans.length} connections, but the client opened ${this.opened}`))
    return this.errors
  }

  /**
   * Runs the test body against `client`, then ends it (destroys it if the
   * body failed) and checks every script ran to its end. A script's error that
   * came before the body settled is the one reported: it is why the body failed.
   */
  async run<C extends Closable>(client: C, body: (client: C) => Promise<void>): Promise<void> {
    let failure: unknown = null
    let timer: NodeJS.Timeout | undefined
    const bodyLimit = this.timeoutMs * 4
    try {
      await Promise.race([
        body(client),
        this.firstError,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the test body did not finish within ${bodyLimit} ms`)), bodyLimit)
        }),
      ])
    } catch (err) {
      failure = err
    } finally {
      clearTimeout(timer)
    }
    const before = this.errors.length
    if (failure === null) {
      try {
        await Promise.race([
          client.end(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`end() did not finish within ${this.timeoutMs} ms`)), this.timeoutMs)
          }),
        ])
      } catch (err) {
        failure = err
        client.destroy()
      } finally {
        clearTimeout(timer)
      }
    } else client.destroy()
    const errors = await this.finished()
    if (errors.length > 0 && (failure === null || before > 0)) throw errors[0]
    if (failure !== null) throw failure
  }
}

export function scriptedBackend(plans: readonly ConnectionPlan[], options?: BackendOptions): ScriptedBackend {
  return new ScriptedBackend(plans, options)
}

// --- steps ----------------------------------------------------------------------

function expectStep(type: FrontendType, fields: Record<string, FieldCheck> = {}): Step {
  return { kind: 'expect', type, fields: Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) }
}

/** Steps expecting one message each, with checks of the fields given. */
export const expect = {
  parse: (f: { name?: FieldCheck; sql?: FieldCheck; types?: FieldCheck } = {}) => expectStep('Parse', f),
  bind: (f: { portal?: FieldCheck; statement?: FieldCheck; params?: FieldCheck; paramFormats?: FieldCheck; resultFormats?: FieldCheck } = {}) => expectStep('Bind', f),
  describe: (kind: 'S' | 'P', name?: FieldCheck) => expectStep('Describe', { kind, name }),
  execute: (f: { portal?: FieldCheck; maxRows?: FieldCheck } = {}) => expectStep('Execute', f),
  close: (kind: 'S' | 'P', name?: FieldCheck) => expectStep('Close', { kind, name }),
  query: (sql?: FieldCheck) => expectStep('Query', { sql }),
  sync: () => expectStep('Sync'),
  flush: () => expectStep('Flush'),
  terminate: () => expectStep('Terminate'),
  copyData: (data?: FieldCheck) => expectStep('CopyData', { data }),
  copyDone: () => expectStep('CopyDone'),
  copyFail: (reason?: FieldCheck) => expectStep('CopyFail', { reason }),
}

/** Sends backend messages, as one chunk. */
export function send(...messages: Uint8Array[]): Step {
  const bytes = new Uint8Array(messages.reduce((n, m) => n + m.length, 0))
  let at = 0
  for (const m of messages) {
    bytes.set(m, at)
    at += m.length
  }
  return { kind: 'send', bytes }
}

/** Waits until the client has written `count` messages the script has not read yet: proof they were sent before any reply. */
export const pipelined = (count: number): Step => ({ kind: 'pipelined', count })
/** From now on write() returns false: the client must hold what it has not written until drain(). */
export const block = (): Step => ({ kind: 'block' })
export const drain = (): Step => ({ kind: 'drain' })
/** The server closes the stream (after what it sent); the script ends there. */
export const serverCloses = (): Step => ({ kind: 'close' })
/** The stream fails with an error (as a reset socket); the script ends there. */
export const streamFails = (message = 'connection reset by the scripted backend'): Step => ({ kind: 'fail', message })
/** Runs `fn` at this point of the script (a promise is waited for, bounded). */
export const act = (label: string, fn: () => unknown): Step => ({ kind: 'act', label, fn })
/** A connection attempt the stream factory refuses. */
export const refused = (message = 'connection refused by the scripted backend'): Refusal => ({ refuse: message })

/** A predicate for field checks, with a label for failure messages. */
export function where<T>(label: string, test: (v: T) => boolean): FieldCheck {
  return Object.assign((v: unknown) => test(v as T), { label })
}
