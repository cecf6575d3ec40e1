import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import {
  binaryDecodable,
  parseResponse,
  parseStream,
  WIRE_BINARY_OIDS,
  WireHttpError,
  WireParser,
  WireProtocolError,
  WireServerError,
  wireTypeName,
  type WireEvent,
} from '../../../src/wire/index.js'
import { resolveTypeOptions } from '../../../src/wire/scalars.js'
import { typeTable } from '../../../src/wire/types.js'
import { commandComplete, concat, dataRow, errorResponse, int32, message, result, rowDescription } from '../../support/fakes/backend-messages.js'
import { bytes, parseAll, parseChunks, RECORDINGS, rowsOf, splitAt, type ArrayEvent } from '../../support/fixtures/wire-recordings.js'
import { repoRoot as root } from '../../support/paths.js'

// The parser's framing and state: any split of a stream gives the same
// events, and a stream that is malformed anywhere fails with a
// WireProtocolError that says what is wrong, never with a wrong row.


/** Every recording of one server, end to end: a valid stream of many results. */
function recordingStream(version: number): Uint8Array {
  const { fixtures } = RECORDINGS.find((r) => r.version === version)!
  return concat(
    Object.entries(fixtures)
      .filter(([name]) => name !== 'timestamps-beyond-date')
      .flatMap(([, f]) => [f.text, f.binary, f['all-binary']].filter((h): h is string => h !== undefined).map(bytes)),
  )
}

/** Where each message of a valid stream starts. */
function messageStarts(data: Uint8Array): number[] {
  const starts: number[] = []
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  for (let p = 0; p < data.length; p += 1 + view.getInt32(p + 1)) starts.push(p)
  return starts
}

function throwsWire(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof WireProtocolError, `a WireProtocolError, got ${String(err)}`)
    assert.match(err.message, pattern)
    assert.equal(err.code, 'PG_PROTOCOL_VIOLATION')
    return true
  })
}

for (const { version, fixtures } of RECORDINGS) {
  test(`PostgreSQL ${version}: every recording parses the same in 1-byte chunks and at every single split`, () => {
    for (const [name, f] of Object.entries(fixtures)) {
      for (const hex of [f.text, f.binary, f['all-binary']]) {
        if (hex === undefined || name === 'timestamps-beyond-date') continue
        const data = bytes(hex)
        const whole = parseAll(data)
        assert.deepEqual(parseChunks(Array.from(data, (b) => Uint8Array.of(b))), whole, `${name} byte by byte`)
        for (let cut = 1; cut < data.length; cut++) {
          const split = parseChunks(splitAt(data, [cut]))
          if (split.length !== whole.length) assert.fail(`${name}: cut at ${cut} gives ${split.length} events, not ${whole.length}`)
          assert.deepEqual(split, whole, `${name}: cut at ${cut}`)
        }
      }
    }
  })

  test(`PostgreSQL ${version}: all recordings as one stream, split at random points`, () => {
    const data = recordingStream(version)
    const whole = parseAll(data)
    assert.ok(whole.length > 100)
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: data.length - 1 }), { maxLength: 60 }), (cuts) => {
        assert.deepEqual(parseChunks(splitAt(data, cuts.sort((a, b) => a - b))), whole)
      }),
      { numRuns: 150 },
    )
  })

  test(`PostgreSQL ${version}: a stream cut short fails at end(), after events that are a prefix of the real ones`, () => {
    const data = recordingStream(version)
    const whole = parseAll(data)
    const starts = new Set(messageStarts(data))
    fc.assert(
      fc.property(fc.integer({ min: 1, max: data.length - 1 }), (cut) => {
        const p = new WireParser<'array'>({ rowMode: 'array' })
        const events = p.push(data.subarray(0, cut))
        assert.deepEqual(events, whole.slice(0, events.length))
        const last = events[events.length - 1]
        const betweenResults = starts.has(cut) && (last === undefined || last.type === 'complete' || last.type === 'error' || last.type === 'notice')
        if (betweenResults) p.end()
        else throwsWire(() => p.end(), /the stream ended inside/)
      }),
      { numRuns: 300 },
    )
  })

  test(`PostgreSQL ${version}: a message length changed anywhere is an error, never a wrong row`, () => {
    const data = recordingStream(version)
    const whole = parseAll(data)
    const starts = messageStarts(data)
    fc.assert(
      fc.property(fc.constantFrom(...starts), fc.integer({ min: -5, max: 40 }).filter((d) => d !== 0), (at, delta) => {
        const bad = Uint8Array.from(data)
        const view = new DataView(bad.buffer)
        view.setInt32(at + 1, view.getInt32(at + 1) + delta)
        const events: ArrayEvent[] = []
        const p = new WireParser<'array'>({ rowMode: 'array', onRow: () => undefined })
        assert.throws(
          () => {
            events.push(...p.push(bad))
            p.end()
          },
          (err) => err instanceof WireProtocolError,
        )
        // Rows delivered by callbacks before the failure are the real ones.
        assert.deepEqual(events, whole.slice(0, events.length))
      }),
      { numRuns: 400 },
    )
  })
}

test('random bytes only ever fail with a WireProtocolError', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom('T', 'D', 'C', 'E', 'N', 'I'), (body, type) => {
      for (const data of [body, message(type, body), concat([rowDescription([{ typeOid: 23, format: 1 }]), message('D', body)])]) {
        try {
          const p = new WireParser()
          p.push(data)
          p.end()
        } catch (err) {
          if (!(err instanceof WireProtocolError)) throw err
        }
      }
    }),
    { numRuns: 2000 },
  )
})

test('an unexpected message type is named at once, even before its length has arrived', () => {
  throwsWire(() => new WireParser().push(Uint8Array.of(0x5a)), /ReadyForQuery \('Z', 0x5a\) where a query result was expected/)
  throwsWire(() => new WireParser().push(message('2', new Uint8Array(0))), /BindComplete \('2', 0x32\)/)
  throwsWire(() => new WireParser().push(message('q', new Uint8Array(0))), /unknown message type 'q' \(0x71\)/)
  throwsWire(() => new WireParser().push(Uint8Array.of(0, 0, 0, 0, 4)), /unknown message type 0x00/)
  // After a valid result too.
  const r = result([{ typeOid: 23, format: 0 }], [['1']])
  throwsWire(() => new WireParser().push(concat([r, message('Z', Uint8Array.of(0x49))])), /ReadyForQuery/)
})

test('lengths: below 4, negative, beyond maxMessageSize (before the body is awaited), EmptyQueryResponse exactly 4', () => {
  throwsWire(() => new WireParser().push(Uint8Array.of(0x44, 0, 0, 0, 3)), /a DataRow with invalid length 3/)
  throwsWire(() => new WireParser().push(Uint8Array.of(0x44, 0xff, 0xff, 0xff, 0xff)), /invalid length -1/)
  throwsWire(() => new WireParser().push(Uint8Array.of(0x44, 0x7f, 0xff, 0xff, 0xff)), /2147483647 bytes, more than maxMessageSize \(1073807360\)/)
  const p = new WireParser({ maxMessageSize: 100 })
  p.push(concat([rowDescription([{ typeOid: 25, format: 0 }]), Uint8Array.of(0x44, 0, 0)]))
  throwsWire(() => p.push(Uint8Array.of(0, 101)), /a DataRow of 101 bytes, more than maxMessageSize \(100\)/)
  const ok = new WireParser({ maxMessageSize: 100 })
  ok.push(rowDescription([{ typeOid: 25, format: 0 }]))
  assert.equal(ok.push(dataRow(['x'.repeat(89)])).length, 1)
  throwsWire(() => new WireParser().push(message('I', Uint8Array.of(0))), /EmptyQueryResponse of length 5; it must be 4/)
  // The Node client's limit for the type: no tag is 64 KiB long.
  throwsWire(() => new WireParser().push(Uint8Array.of(0x43, 0, 1, 0, 1)), /a CommandComplete of 65537 bytes, more than the 65536 bytes its type can take/)
  assert.throws(() => new WireParser({ maxMessageSize: 4 }), TypeError)
})

test('memory follows the bytes that arrive, not what a header claims; a big message split anywhere arrives whole', () => {
  const before = process.memoryUsage().arrayBuffers
  const p = new WireParser()
  p.push(rowDescription([{ typeOid: 25, format: 0 }]))
  // A DataRow claiming almost 1 GiB, of which 20 bytes arrive.
  p.push(concat([Uint8Array.of(0x44), int32(1 << 30), new Uint8Array(20)]))
  const held = process.memoryUsage().arrayBuffers - before
  assert.ok(held < 8 << 20, `holds ${held} bytes after receiving 25`)
  // A 3 MiB value in uneven chunks: the buffer grows as it fills.
  const big = 'v'.repeat(3 << 20)
  const bytes = concat([rowDescription([{ typeOid: 25, format: 0 }]), dataRow([big])])
  const q = new WireParser<'array'>({ rowMode: 'array' })
  const rows: unknown[][] = []
  for (let at = 0; at < bytes.length; ) {
    const next = Math.min(bytes.length, at + 1 + ((at * 7919) % 200_000))
    for (const e of q.push(bytes.subarray(at, next))) if (e.type === 'row') rows.push(e.row as unknown[])
    at = next
  }
  assert.equal(rows.length, 1)
  assert.equal(rows[0]![0], big)
})

test('rows must match their description', () => {
  const T = rowDescription([
    { typeOid: 23, format: 1 },
    { typeOid: 25, format: 0 },
  ])
  const start = () => {
    const p = new WireParser()
    p.push(T)
    return p
  }
  throwsWire(() => new WireParser().push(dataRow(['1'])), /a DataRow outside a result/)
  throwsWire(() => start().push(dataRow([int32(1)])), /a DataRow with 1 columns where the RowDescription has 2 \(row 1 of the result\)/)
  throwsWire(() => start().push(dataRow([int32(1), 'a', 'b'])), /3 columns where the RowDescription has 2/)
  // A value length beyond the message, a length below -1, bytes after the last value.
  const good = dataRow([int32(7), 'abc'])
  const longer = Uint8Array.from(good)
  new DataView(longer.buffer).setInt32(15, 4)
  throwsWire(() => start().push(longer), /column 2 has length 4 with 3 bytes left/)
  const negative = Uint8Array.from(good)
  new DataView(negative.buffer).setInt32(7, -2)
  throwsWire(() => start().push(negative), /column 1 has length -2/)
  throwsWire(() => start().push(message('D', concat([good.subarray(5), Uint8Array.of(0)]))), /1 bytes after the last column of a DataRow/)
  throwsWire(() => start().push(message('D', good.subarray(5, 17))), /a DataRow truncated at column 2/)
  // A value that does not fit its type names its row and column.
  const p = start()
  p.push(dataRow([int32(1), 'a']))
  throwsWire(() => p.push(dataRow([Uint8Array.of(0, 0, 1), 'b'])), /column "c0" \(int4, binary\) in row 2 of the result: malformed int4: 3 bytes where 4 were expected/)
})

test('results must be well formed: no description inside a result, formats 0 or 1, exact lengths', () => {
  const T = rowDescription([{ typeOid: 23, format: 0 }])
  throwsWire(() => new WireParser().push(concat([T, T])), /a RowDescription inside a result that has not ended/)
  throwsWire(() => new WireParser().push(concat([T, message('I', new Uint8Array(0))])), /an EmptyQueryResponse inside a result/)
  throwsWire(() => new WireParser().push(rowDescription([{ typeOid: 23, format: 2 as 0 }])), /format code 2/)
  throwsWire(() => new WireParser().push(message('T', T.subarray(5, T.length - 1))), /a RowDescription truncated in column 1 of 1/)
  throwsWire(() => new WireParser().push(message('T', concat([T.subarray(5), Uint8Array.of(0)]))), /1 bytes after the last column of a RowDescription/)
  throwsWire(() => new WireParser().push(message('C', new TextEncoder().encode('SELECT 1'))), /CommandComplete whose tag is not one NUL-terminated string/)
  throwsWire(() => new WireParser().push(message('E', Uint8Array.of(0x4d, 0x78))), /an ErrorResponse with an unterminated field/)
  throwsWire(() => new WireParser().push(message('E', Uint8Array.of(0x4d, 0x78, 0))), /an ErrorResponse without its terminating NUL/)
  throwsWire(() => new WireParser().push(message('N', Uint8Array.of(0, 0))), /1 bytes after the end of a NoticeResponse/)
  // Invalid UTF-8 is refused, not replaced.
  throwsWire(() => new WireParser().push(concat([rowDescription([{ typeOid: 25, format: 0 }]), dataRow([Uint8Array.of(0x61, 0xff)])])), /invalid UTF-8/)
})

test('end(): a message or a result left incomplete; nothing is accepted after a failure or after end()', () => {
  const r = result([{ typeOid: 23, format: 0 }], [['1'], ['2']])
  const cutInMessage = new WireParser()
  cutInMessage.push(r.subarray(0, r.length - 3))
  throwsWire(() => cutInMessage.end(), /the stream ended inside a CommandComplete: \d+ of its 14 bytes arrived/)
  const cutInHeader = new WireParser()
  cutInHeader.push(r.subarray(0, r.length - 12))
  throwsWire(() => cutInHeader.end(), /the stream ended inside a message header \(2 of 5 bytes\)/)
  const cutInResult = new WireParser()
  cutInResult.push(r.subarray(0, r.length - 14))
  throwsWire(() => cutInResult.end(), /the stream ended inside a result: a RowDescription and 2 rows, but no CommandComplete or ErrorResponse/)
  throwsWire(() => cutInResult.push(r), /push\(\) after the parser stopped: the stream ended inside a result/)

  const failed = new WireParser()
  assert.throws(() => failed.push(Uint8Array.of(0x5a)))
  throwsWire(() => failed.push(r), /push\(\) after the parser stopped: ReadyForQuery/)
  throwsWire(() => failed.end(), /end\(\) after the parser stopped/)

  const done = new WireParser()
  done.push(r)
  done.end()
  throwsWire(() => done.push(r), /push\(\) after end\(\)/)
  assert.throws(() => new WireParser().push('text' as unknown as Uint8Array), TypeError)
  assert.throws(() => new WireParser({ rowMode: 'rows' as 'array' }), TypeError)
  assert.throws(() => new WireParser({ types: { int8: 'float' as 'number' } }), /types.int8 must be one of 'bigint', 'number', 'string'/)
})

test('callbacks run in stream order, before push() returns the same events', () => {
  const seen: string[] = []
  const stream = concat([
    message('N', concat([new TextEncoder().encode('SWARNING\0C01000\0Mcareful\0'), Uint8Array.of(0)])),
    result([{ name: 'n', typeOid: 23, format: 1 }], [[int32(1)], [int32(2)]]),
    errorResponse({ S: 'ERROR', V: 'ERROR', C: '22012', M: 'division by zero', P: '8', L: 'x' }),
    message('I', new Uint8Array(0)),
    commandComplete('INSERT 0 3'),
  ])
  const p: WireParser = new WireParser({
    onNotice: (n) => seen.push(`notice ${n.severity} ${n.message}`),
    onFields: (f) => seen.push(`fields ${f.map((x) => x.name)} ${String(p.fields?.length)}`),
    onRow: (row, fields) => seen.push(`row ${JSON.stringify(row)} of ${fields.length}`),
    onComplete: (c) => seen.push(`complete ${c.command} ${c.rowCount} ${c.empty}`),
    onError: (e) => seen.push(`error ${e.code} ${e.position} ${e.line}`),
  })
  const events = p.push(stream)
  p.end()
  assert.deepEqual(seen, [
    'notice WARNING careful',
    'fields n 1',
    'row {"n":1} of 1',
    'row {"n":2} of 1',
    'complete SELECT 2 false',
    // A line that is not a number is left out rather than made NaN.
    'error 22012 8 undefined',
    'complete  null true',
    'complete INSERT 3 false',
  ])
  assert.deepEqual(
    events.map((e) => e.type),
    ['notice', 'fields', 'row', 'row', 'complete', 'error', 'complete', 'complete'],
  )
  assert.equal(p.fields, null)
  const err = events[5] as Extract<WireEvent, { type: 'error' }>
  assert.ok(err.error instanceof WireServerError)
  assert.equal(err.error.name, 'WireServerError')
})

test('a callback that throws stops the parser (the rest of its chunk was never read)', () => {
  const p = new WireParser({
    onRow: () => {
      throw new Error('render failed')
    },
  })
  assert.throws(() => p.push(result([{ typeOid: 23, format: 0 }], [['1']])), /render failed/)
  throwsWire(() => p.push(new Uint8Array(0)), /after the parser stopped: render failed/)
})

test('command tags: counts where the command reports one', async () => {
  const { parseCommandTag } = await import('../../../src/wire/index.js')
  assert.deepEqual(parseCommandTag('SELECT 5'), { command: 'SELECT', rowCount: 5 })
  assert.deepEqual(parseCommandTag('INSERT 0 12'), { command: 'INSERT', rowCount: 12 })
  assert.deepEqual(parseCommandTag('MERGE 2'), { command: 'MERGE', rowCount: 2 })
  assert.deepEqual(parseCommandTag('COPY 7'), { command: 'COPY', rowCount: 7 })
  assert.deepEqual(parseCommandTag('CREATE TABLE'), { command: 'CREATE TABLE', rowCount: null })
  assert.deepEqual(parseCommandTag('SELECT'), { command: 'SELECT', rowCount: null })
  assert.deepEqual(parseCommandTag(''), { command: '', rowCount: null })
})

function byteStream(chunks: Uint8Array[], onCancel?: () => void): ReadableStream<Uint8Array> {
  let i = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]!)
      else controller.close()
    },
    cancel() {
      onCancel?.()
    },
  })
}

test('parseStream: events as the chunks arrive, from a ReadableStream, a Response or an async iterable', async () => {
  const data = recordingStream(18)
  const whole = parseAll(data)
  const chunks = splitAt(data, [1, 2, 3, 100, 101, 2000, 2001, 2002])
  const collect = async (source: Parameters<typeof parseStream>[0]) => {
    const out: ArrayEvent[] = []
    for await (const ev of parseStream(source, { rowMode: 'array' })) out.push(ev)
    return out
  }
  assert.deepEqual(await collect(byteStream(chunks)), whole)
  assert.deepEqual(await collect(new Response(byteStream(chunks))), whole)
  assert.deepEqual(
    await collect(
      (async function* () {
        yield* chunks
      })(),
    ),
    whole,
  )
  // A body with nothing in it is no result at all.
  assert.deepEqual(await collect(new Response(null)), [])
})

test('parseStream: events before a malformed part are yielded, then the error is thrown', async () => {
  const stream = concat([result([{ typeOid: 23, format: 0 }], [['1'], ['2']]), rowDescription([{ typeOid: 23, format: 0 }]), dataRow(['3']), dataRow(['x'])])
  const seen: string[] = []
  await assert.rejects(async () => {
    for await (const ev of parseStream(byteStream([stream]), { rowMode: 'array' })) seen.push(ev.type === 'row' ? `row ${ev.row[0]}` : ev.type)
  }, /column "c0" \(int4, text\) in row 2 of the result: malformed int4: 'x'/)
  assert.deepEqual(seen, ['fields', 'row 1', 'row 2', 'complete', 'fields', 'row 3'])

  // A stream that ends inside a result is an error, not a short result.
  await assert.rejects(async () => {
    for await (const ev of parseStream(byteStream([stream.subarray(0, stream.length - dataRow(['x']).length)]))) void ev
  }, /ended inside a result/)
})

test('parseStream: leaving the loop early cancels the body; an HTTP error status is a WireHttpError', async () => {
  let cancelled = false
  const data = result(
    [{ typeOid: 23, format: 0 }],
    Array.from({ length: 10 }, (_, i) => [String(i)]),
  )
  for await (const ev of parseStream(byteStream(splitAt(data, [20, 40, 60]), () => (cancelled = true)))) {
    if (ev.type === 'row') break
  }
  assert.equal(cancelled, true)

  await assert.rejects(
    parseResponse(new Response('no such report', { status: 404, statusText: 'Not Found' })),
    (err: unknown) => err instanceof WireHttpError && err.status === 404 && err.message === 'HTTP 404 Not Found: no such report',
  )
})

test('parseResponse: one result per statement, failures as results with their error, notices attached', async () => {
  const stream = concat([
    message('N', concat([new TextEncoder().encode('SNOTICE\0C00000\0Mfirst\0'), Uint8Array.of(0)])),
    result([{ name: 'a', typeOid: 23, format: 0 }], [['1'], ['2']]),
    rowDescription([{ name: 'b', typeOid: 25, format: 0 }]),
    dataRow(['x']),
    errorResponse({ S: 'ERROR', C: '22012', M: 'division by zero' }),
    commandComplete('CREATE TABLE'),
    message('I', new Uint8Array(0)),
    message('N', concat([new TextEncoder().encode('SNOTICE\0C00000\0Mlast\0'), Uint8Array.of(0)])),
  ])
  const results = await parseResponse(new Response(byteStream(splitAt(stream, [7, 50]))))
  assert.equal(results.length, 4)
  const [a, b, c, d] = results
  assert.deepEqual(a!.rows, [{ a: 1 }, { a: 2 }])
  assert.deepEqual([a!.command, a!.rowCount, a!.tag, a!.error, a!.notices.map((n) => n.message)], ['SELECT', 2, 'SELECT 2', null, ['first']])
  assert.deepEqual(b!.rows, [{ b: 'x' }])
  assert.equal(b!.error?.code, '22012')
  assert.equal(b!.command, '')
  assert.deepEqual([c!.command, c!.rowCount, c!.fields, c!.rows], ['CREATE TABLE', null, [], []])
  assert.deepEqual([d!.empty, d!.command, d!.notices.map((n) => n.message)], [true, '', ['last']])

  const arrays = await parseResponse(
    (async function* () {
      yield stream
    })(),
    { rowMode: 'array' },
  )
  assert.deepEqual(arrays[0]!.rows, [[1], [2]])
})

test('the binary type list is exactly the set of types decoded in binary, and every one has a name', () => {
  const table = typeTable(resolveTypeOptions())
  assert.deepEqual([...WIRE_BINARY_OIDS].sort((a, b) => a - b), [...table.keys()].sort((a, b) => a - b))
  for (const oid of WIRE_BINARY_OIDS) {
    assert.equal(binaryDecodable(oid), true)
    assert.ok(wireTypeName(oid), `a name for ${oid}`)
  }
  assert.equal(binaryDecodable(600), false)
  assert.equal(wireTypeName(600), undefined)
  assert.equal(wireTypeName(1185), 'timestamptz[]')
  assert.equal(wireTypeName(18), 'char')
})

test('src/wire uses nothing a browser lacks and imports only its own files and the shared protocol/ and types/ code', () => {
  // The whole graph the entry reaches is compiled against the DOM library in dom-build.test.ts.
  const dir = join(root, 'src', 'wire')
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'))
  assert.ok(files.includes('index.ts') && files.includes('formats.ts'))
  for (const file of files) {
    const text = readFileSync(join(dir, file), 'utf8')
    const code = text.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '')
    for (const name of ['Buffer', 'process', 'require', '__dirname', 'setImmediate', 'global', 'module']) {
      assert.doesNotMatch(code, new RegExp(`\\b${name}\\b`), `${file} uses ${name}`)
    }
    for (const m of code.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
      assert.match(m[1]!, /^(?:\.\/[a-z-]+|\.\.\/(?:protocol|types|types\/codecs)\/[a-z0-9-]+|\.\.\/errors)\.js$/, `${file} imports ${m[1]}`)
    }
  }
  const formats = readFileSync(join(dir, 'formats.ts'), 'utf8')
  assert.doesNotMatch(formats, /\bimport\b/, 'formats.ts stands alone')
})

test('rows of a big result arrive whole however the stream is cut', () => {
  const rows = Array.from({ length: 2000 }, (_, i) => [int32(i), `value ${i} ${'é'.repeat(i % 7)}`, i % 3 === 0 ? null : 'x'])
  const data = result(
    [
      { typeOid: 23, format: 1 },
      { typeOid: 25, format: 0 },
      { typeOid: 1043, format: 1 },
    ],
    rows,
  )
  const expected = rows.map((_, i) => [i, `value ${i} ${'é'.repeat(i % 7)}`, i % 3 === 0 ? null : 'x'])
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: data.length - 1 }), { maxLength: 300 }), (cuts) => {
      assert.deepEqual(rowsOf(parseChunks(splitAt(data, cuts.sort((a, b) => a - b)))), expected)
    }),
    { numRuns: 50 },
  )
})
