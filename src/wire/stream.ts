import { WireHttpError, type WireNotice, type WireServerError } from './errors.js'
import { WireParser, type RowMode, type RowOf, type WireEvent, type WireField, type WireParserOptions } from './parser.js'

// Reading a whole byte stream (a fetch() body, most often) through a
// WireParser: event by event as the bytes arrive, or all results at once.
// The stream types are described by their shape, so the same code serves a
// browser's fetch, Node's fetch, and any async iterable of chunks.

export interface ByteStreamReader {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>
  cancel(reason?: unknown): Promise<void>
  releaseLock(): void
}

/** A ReadableStream of bytes, such as `response.body`. */
export interface ByteStream {
  getReader(): ByteStreamReader
}

/** What pipegres/wire needs of a fetch() Response. */
export interface ResponseLike {
  ok: boolean
  status: number
  statusText: string
  body: ByteStream | null
  text?(): Promise<string>
}

export type WireSource = ResponseLike | ByteStream | AsyncIterable<Uint8Array>

/** One statement's result, complete. */
export interface WireResult<R = Record<string, unknown>> {
  fields: WireField[]
  rows: R[]
  /** The CommandComplete tag ('' for an empty query or a failed statement). */
  tag: string
  command: string
  rowCount: number | null
  /** True when the query string held no statement. */
  empty: boolean
  /** Set when the statement failed; rows received before the failure are kept. */
  error: WireServerError | null
  /** Notices the server sent before the result ended. */
  notices: WireNotice[]
}

function isResponse(source: WireSource): source is ResponseLike {
  return typeof source === 'object' && source !== null && 'ok' in source && 'body' in source && 'status' in source
}

function isByteStream(source: WireSource): source is ByteStream {
  return typeof (source as ByteStream).getReader === 'function'
}

async function httpError(response: ResponseLike): Promise<WireHttpError> {
  let text = ''
  try {
    text = response.text ? (await response.text()).slice(0, 500) : ''
  } catch {
    // The status says enough.
  }
  const status = `HTTP ${response.status}${response.statusText ? ' ' + response.statusText : ''}`
  return new WireHttpError(response.status, text ? `${status}: ${text}` : status)
}

async function* readerChunks(stream: ByteStream): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader()
  let finished = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) {
        finished = true
        return
      }
      if (value !== undefined) yield value
    }
  } finally {
    // Stopped early (the consumer broke out, or parsing failed): stop the download too.
    if (!finished) await reader.cancel().catch(() => undefined)
    reader.releaseLock()
  }
}

async function* chunksOf(source: WireSource): AsyncGenerator<Uint8Array> {
  if (isResponse(source)) {
    if (!source.ok) throw await httpError(source)
    if (source.body !== null) yield* readerChunks(source.body)
  } else if (isByteStream(source)) {
    yield* readerChunks(source)
  } else {
    yield* source
  }
}

function asBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk)
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  throw new TypeError(`the stream gave a chunk that is not bytes (${typeof chunk})`)
}

/**
 * Parses a stream of result messages as it arrives and yields each event.
 * Events parsed before a malformed part are yielded before the
 * WireProtocolError is thrown; an unsuccessful HTTP status throws a
 * WireHttpError. Breaking out of the loop cancels the stream.
 */
export async function* parseStream<M extends RowMode = 'object'>(source: WireSource, options: WireParserOptions<M> = {}): AsyncGenerator<WireEvent<RowOf<M>>, void, undefined> {
  // Events are gathered through the callbacks rather than push()'s return
  // value, so that those parsed before a failure in the same chunk still count.
  let queue: WireEvent<RowOf<M>>[] = []
  const parser = new WireParser<M>({
    ...options,
    onFields: (fields) => {
      queue.push({ type: 'fields', fields })
      options.onFields?.(fields)
    },
    onRow: (row, fields) => {
      queue.push({ type: 'row', row })
      options.onRow?.(row, fields)
    },
    onComplete: (c) => {
      queue.push({ type: 'complete', ...c })
      options.onComplete?.(c)
    },
    onError: (error) => {
      queue.push({ type: 'error', error })
      options.onError?.(error)
    },
    onNotice: (notice) => {
      queue.push({ type: 'notice', notice })
      options.onNotice?.(notice)
    },
  })
  for await (const chunk of chunksOf(source)) {
    let failure: unknown = null
    try {
      parser.push(asBytes(chunk))
    } catch (err) {
      failure = err
    }
    const ready = queue
    queue = []
    yield* ready
    if (failure !== null) throw failure
  }
  parser.end()
}

/**
 * Reads a whole stream and resolves with one result per statement. A failed
 * statement is a result whose `error` is set (the stream may hold more
 * results after it); a malformed stream rejects with a WireProtocolError.
 */
export async function parseResponse<M extends RowMode = 'object'>(source: WireSource, options: WireParserOptions<M> = {}): Promise<WireResult<RowOf<M>>[]> {
  const results: WireResult<RowOf<M>>[] = []
  let open: WireResult<RowOf<M>> | null = null
  let notices: WireNotice[] = []
  const start = (fields: WireField[]): WireResult<RowOf<M>> => {
    const r: WireResult<RowOf<M>> = { fields, rows: [], tag: '', command: '', rowCount: null, empty: false, error: null, notices }
    notices = []
    results.push(r)
    return r
  }
  for await (const ev of parseStream(source, options)) {
    switch (ev.type) {
      case 'fields':
        open = start(ev.fields)
        break
      case 'row':
        open!.rows.push(ev.row)
        break
      case 'complete': {
        const r = open ?? start([])
        r.tag = ev.tag
        r.command = ev.command
        r.rowCount = ev.rowCount
        r.empty = ev.empty
        open = null
        break
      }
      case 'error':
        ;(open ?? start([])).error = ev.error
        open = null
        break
      case 'notice':
        if (open) open.notices.push(ev.notice)
        else notices.push(ev.notice)
        break
    }
  }
  // Notices after the last result belong with it.
  if (notices.length > 0 && results.length > 0) results[results.length - 1]!.notices.push(...notices)
  return results
}
