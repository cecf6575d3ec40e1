// The byte stream a scripted backend hands the client (see
// scripted-backend.ts): the client's writes are cut into frontend messages
// for the script to read, and what the script sends reaches the client as
// 'data' on a later turn of the event loop, in order, as from a socket. It is
// no Node Duplex, so the client never tries to wrap it in TLS.

import { EventEmitter } from 'node:events'
import type { ByteStream } from '../../../src/index.js'
import { parseFrontend, parseStartup, type FrontendMessage, type StartupPacket } from './frontend-messages.js'

/**
 * The stream the client gets: what it writes is cut into messages for the
 * script; what the script sends comes back as 'data' on a later turn of the
 * event loop, in order, as from a socket.
 */
export class ScriptedStream extends EventEmitter implements ByteStream {
  /** Bytes written and not yet cut into whole messages. */
  private pending = new Uint8Array(0)
  private startupRead = false
  /** What is to be delivered to the client: chunks, then possibly an end. */
  private outgoing: (Uint8Array | { end: Error | null })[] = []
  private flushing = false
  private paused = false
  private closeEmitted = false
  /** Set by a 'block' step: write() asks the client to wait for 'drain'. */
  blocked = false
  /** The client ended or destroyed its side. */
  clientClosed = false
  startup: StartupPacket | null = null
  readonly inbox: FrontendMessage[] = []
  /** Wakes the script when anything arrives or the client closes. */
  onChange: () => void = () => {}

  write(chunk: Uint8Array): boolean {
    if (this.clientClosed || this.closeEmitted) return false
    const all = new Uint8Array(this.pending.length + chunk.length)
    all.set(this.pending)
    all.set(chunk, this.pending.length)
    const view = new DataView(all.buffer)
    let at = 0
    for (;;) {
      const head = this.startupRead ? 1 : 0
      if (all.length - at < head + 4) break
      const len = view.getInt32(at + head)
      if (all.length - at < head + len) break
      const body = all.slice(at + head + 4, at + head + len)
      if (this.startupRead) this.inbox.push(parseFrontend(all[at]!, body))
      else {
        this.startup = parseStartup(body)
        this.startupRead = true
      }
      at += head + len
    }
    this.pending = all.slice(at)
    this.onChange()
    return !this.blocked
  }

  end(): void {
    this.closedByClient()
  }

  destroy(): void {
    this.closedByClient()
  }

  private closedByClient(): void {
    if (this.clientClosed) return
    this.clientClosed = true
    this.onChange()
    // A server closes its side once the client has closed its own.
    setImmediate(() => this.emitClose())
  }

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    this.scheduleFlush()
  }

  /** Queues bytes for the client. */
  deliver(bytes: Uint8Array): void {
    this.outgoing.push(bytes)
    this.scheduleFlush()
  }

  /** Ends the stream after what was delivered: cleanly (null) or with an error. */
  finish(error: Error | null): void {
    this.outgoing.push({ end: error })
    this.scheduleFlush()
  }

  /** Emits 'drain' on a later turn, as a socket does once its buffer empties. */
  drain(): void {
    this.blocked = false
    setImmediate(() => {
      if (!this.closeEmitted) this.emit('drain')
    })
  }

  private scheduleFlush(): void {
    if (this.flushing) return
    this.flushing = true
    setImmediate(() => {
      this.flushing = false
      while (!this.paused && !this.closeEmitted && this.outgoing.length > 0) {
        const next = this.outgoing.shift()!
        if (next instanceof Uint8Array) this.emit('data', next)
        else {
          if (next.end !== null) this.emit('error', next.end)
          this.emitClose()
        }
      }
    })
  }

  private emitClose(): void {
    if (this.closeEmitted) return
    this.closeEmitted = true
    this.emit('close')
  }

  get closed(): boolean {
    return this.closeEmitted
  }
}
