import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ArgumentError, ProtocolError } from '../../../src/errors.js'
import { Writer } from '../../../src/protocol/writer.js'
import { CodecError } from '../../../src/types/codec.js'
import type { TypeView } from '../../../src/types/view.js'
import {
  BinaryCopyDecoder,
  createCopyDecoder,
  createCopyEncoder,
  CopyRowError,
  resolveCopyOptions,
  TextCopyDecoder,
  CsvCopyDecoder,
  type CopyFormatOptions,
} from '../../../src/copy/format.js'
import { assertEverySplit, catalog, cols, decodeBytes, decodeChunks, decoder, encodeRows, EXACT, hex, splitAt, text, utf8 } from '../../support/codecs/copy-data.js'

// The COPY data layer without a server: exact bytes for known rows in every
// format, every escape both ways, splits at every byte, malformed data, rows
// that cannot be encoded. The options and statements around them:
// statement.test.ts.

const HEADER = '5047434f50590aff0d0a00 00000000 00000000'
const SAMPLE = cols(['id', 23], ['name', 25], ['n', 20], ['ok', 16], ['at', 1184])
const SAMPLE_ROW = [1, 'héllo', null, true, new Date('2000-01-01T00:00:01.5Z')]

test('binary: header, tuple and trailer, byte for byte', () => {
  const bytes = encodeRows(SAMPLE, [SAMPLE_ROW])
  const expected = hex(`${HEADER}
    0005
    00000004 00000001
    00000006 68c3a96c6c6f
    ffffffff
    00000001 01
    00000008 00000000 0016e360
    ffff`)
  assert.deepStrictEqual(bytes, expected)
  assert.deepStrictEqual(decodeBytes(SAMPLE, bytes), [SAMPLE_ROW])
  // No rows: the header and the trailer alone.
  assert.deepStrictEqual(encodeRows(SAMPLE, []), hex(`${HEADER} ffff`))
  assert.deepStrictEqual(decodeBytes(SAMPLE, hex(`${HEADER} ffff`)), [])
})

test('text and csv: known rows, byte for byte', () => {
  assert.equal(text(encodeRows(SAMPLE, [SAMPLE_ROW], { format: 'text' })), '1\théllo\t\\N\tt\t2000-01-01 00:00:01.5+00\n')
  assert.equal(text(encodeRows(SAMPLE, [SAMPLE_ROW], { format: 'csv' })), '1,héllo,,t,2000-01-01 00:00:01.5+00\n')
  assert.equal(text(encodeRows(SAMPLE, [SAMPLE_ROW], { format: 'text', delimiter: '|' })), '1|héllo|\\N|t|2000-01-01 00:00:01.5+00\n')
  for (const format of ['text', 'csv'] as const) {
    assert.deepStrictEqual(decodeBytes(SAMPLE, encodeRows(SAMPLE, [SAMPLE_ROW], { format }), { format }), [SAMPLE_ROW])
  }
})

const T = cols(['t', 25])

test('text: every character that needs an escape, and those that do not', () => {
  const cases: [string | null, string][] = [
    [null, '\\N'],
    ['', ''],
    ['\\', '\\\\'],
    ['\n', '\\n'],
    ['\r', '\\r'],
    ['\t', '\\t'],
    ['\\N', '\\\\N'],
    ['\\.', '\\\\.'],
    ['a\tb\nc\rd\\e', 'a\\tb\\nc\\rd\\\\e'],
    // Other control characters, quotes, commas and non-ASCII go as they are.
    ['\u0001\b\f\u000b\u007f"\',;|', '\u0001\b\f\u000b\u007f"\',;|'],
    ['日本語 🎉 é', '日本語 🎉 é'],
  ]
  for (const [value, line] of cases) {
    const bytes = encodeRows(T, [[value]], { format: 'text' })
    assert.equal(text(bytes), `${line}\n`, JSON.stringify(value))
    assert.deepStrictEqual(decodeBytes(T, bytes, { format: 'text' }), [[value]])
  }
  // Another delimiter is escaped as itself; the tab is then plain data.
  const piped = encodeRows(cols(['a', 25], ['b', 25]), [['x|y\tz', '|']], { format: 'text', delimiter: '|' })
  assert.equal(text(piped), 'x\\|y\tz|\\|\n')
  assert.deepStrictEqual(decodeBytes(cols(['a', 25], ['b', 25]), piped, { format: 'text', delimiter: '|' }), [['x|y\tz', '|']])
})

test('text: reading every escape PostgreSQL defines', () => {
  const cases: [string, string | null][] = [
    ['\\b\\f\\n\\r\\t\\v\\\\', '\b\f\n\r\t\u000b\\'],
    ['\\101\\1012', 'AA2'],
    ['\\1\\12\\7x', '\u0001\n\u0007x'],
    ['\\x41\\x4a\\x4A', 'AJJ'],
    ['\\x4', '\u0004'],
    ['\\x4g', '\u0004g'],
    ['\\xg', 'xg'],
    ['\\q\\.\\N\\ \\"', 'q.N "'],
    ['\\303\\251', 'é'],
    ['\\xc3\\xa9', 'é'],
    ['\\N', null],
    ['\\\\N', '\\N'],
    ['N', 'N'],
    ['', ''],
    // A backslash before a raw newline makes the newline data.
    ['a\\\nb', 'a\nb'],
    ['\\\t', '\t'],
  ]
  for (const [field, value] of cases) {
    const bytes = utf8(`${field}\n`)
    assert.deepStrictEqual(decodeBytes(T, bytes, { format: 'text' }), [[value]], JSON.stringify(field))
    assertEverySplit(T, bytes, [[value]], { format: 'text' })
  }
  // An escaped delimiter is data; an escaped backslash before a delimiter is not.
  const two = cols(['a', 25], ['b', 25])
  assert.deepStrictEqual(decodeBytes(two, utf8('a\\\tb\tc\n'), { format: 'text' }), [['a\tb', 'c']])
  assert.deepStrictEqual(decodeBytes(two, utf8('a\\\\\tc\n'), { format: 'text' }), [['a\\', 'c']])
  assert.deepStrictEqual(decodeBytes(two, utf8('\t\n'), { format: 'text' }), [['', '']])
  assert.deepStrictEqual(decodeBytes(two, utf8('\\N\t\\N\n'), { format: 'text' }), [[null, null]])
})

test('text: malformed data is an error, never a row', () => {
  const two = cols(['a', 25], ['b', 23])
  const bad: [string, RegExp][] = [
    ['x\n', /row 1 has 1 field where 2 columns were expected/],
    ['x\t1\ty\n', /row 1 has more than 2 fields/],
    ['x\r\t1\n', /unescaped carriage return/],
    ['\\0\t1\n', /NUL/],
    ['\\377\t1\n', /not valid UTF-8/],
    ['\\xff\\xfe\t1\n', /not valid UTF-8/],
    ['a\t1\n\\.\nb\t2\n', /after the end-of-data marker/],
  ]
  for (const [data, message] of bad) {
    assert.throws(() => decodeBytes(two, utf8(data), { format: 'text' }), (e: unknown) => e instanceof ProtocolError && message.test(e.message), JSON.stringify(data))
  }
  // A value its type cannot read names the row and the column.
  assert.throws(
    () => decodeBytes(two, utf8('a\t1\nb\tzz\n'), { format: 'text' }),
    (e: unknown) => e instanceof CodecError && /^COPY row 2, column "b" \(int4\): /.test(e.message),
  )
  // A row without its newline at the end of the data.
  const dec = decoder(two, { format: 'text' })
  const rows: unknown[] = []
  dec.push(utf8('a\t1\nb\t2'), 0, 7, rows)
  assert.deepStrictEqual(rows, [['a', 1]])
  assert.throws(() => dec.finish(), /ended in the middle of row 2/)
  // The end-of-data marker ends the data.
  assert.deepStrictEqual(decodeBytes(two, utf8('a\t1\n\\.\n'), { format: 'text' }), [['a', 1]])
})

test('csv: quoting only where needed, doubled quotes, NULL versus the empty string', () => {
  const cases: [string | null, string][] = [
    [null, ''],
    ['', '""'],
    ['plain', 'plain'],
    [' spaced ', ' spaced '],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['"', '""""'],
    ['line\nbreak', '"line\nbreak"'],
    ['cr\rhere', '"cr\rhere"'],
    ['\\.', '"\\."'],
    ['\\', '\\'],
    ['\\N', '\\N'],
    ['tab\there', 'tab\there'],
    ["it's", "it's"],
    ['日本 🎉', '日本 🎉'],
  ]
  for (const [value, field] of cases) {
    const bytes = encodeRows(T, [[value]], { format: 'csv' })
    assert.equal(text(bytes), `${field}\n`, JSON.stringify(value))
    assert.deepStrictEqual(decodeBytes(T, bytes, { format: 'csv' }), [[value]])
  }
  // Another quote and escape: the escape precedes quotes and itself inside quotes.
  const odd: CopyFormatOptions = { format: 'csv', delimiter: ';', quote: "'", escape: '\\' }
  const oddCases: [string, string][] = [
    ["it's", "'it\\'s'"],
    ['a;b\\c', "'a;b\\\\c'"],
    ['back\\slash', 'back\\slash'],
    ['dq"', 'dq"'],
  ]
  for (const [value, field] of oddCases) {
    const bytes = encodeRows(T, [[value]], odd)
    assert.equal(text(bytes), `${field}\n`, value)
    assert.deepStrictEqual(decodeBytes(T, bytes, odd), [[value]])
  }
})

test('csv: reading quotes anywhere in a field, as PostgreSQL does', () => {
  const two = cols(['a', 25], ['b', 25])
  const cases: [string, (string | null)[]][] = [
    ['a,b\n', ['a', 'b']],
    [',\n', [null, null]],
    ['"",""\n', ['', '']],
    ['"a,b","c""d"\n', ['a,b', 'c"d']],
    ['a"b,c"d,e\n', ['ab,cd', 'e']],
    ['"x"y,z\n', ['xy', 'z']],
    ['"multi\nline","cr\rlf\r\n"\n', ['multi\nline', 'cr\rlf\r\n']],
    ['"""",\n', ['"', null]],
    ['\\N,\\\n', ['\\N', '\\']],
  ]
  for (const [data, row] of cases) {
    assert.deepStrictEqual(decodeBytes(two, utf8(data), { format: 'csv' }), [row], JSON.stringify(data))
    assertEverySplit(two, utf8(data), [row], { format: 'csv' })
  }
  const odd: CopyFormatOptions = { format: 'csv', quote: "'", escape: '\\' }
  assert.deepStrictEqual(decodeBytes(two, utf8("'a\\'b','c\\\\d\\e'\n"), odd), [["a'b", 'c\\d\\e']])
  assertEverySplit(two, utf8("'a\\'b','c\\\\d\\e'\n'\\''\\,x\n"), [["a'b", 'c\\d\\e'], ["'\\", 'x']], odd)
})

test('csv: malformed data is an error, never a row', () => {
  const two = cols(['a', 25], ['b', 23])
  const bad: [string, RegExp][] = [
    ['x\n', /row 1 has 1 field where 2 columns were expected/],
    ['x,1,\n', /row 1 has more than 2 fields/],
    ['x\r,1\n', /unquoted carriage return/],
  ]
  for (const [data, message] of bad) {
    assert.throws(() => decodeBytes(two, utf8(data), { format: 'csv' }), (e: unknown) => e instanceof ProtocolError && message.test(e.message), JSON.stringify(data))
  }
  assert.throws(() => decodeBytes(two, utf8('"open,1\n'), { format: 'csv' }), /ended inside a quoted field of row 1/)
  assert.throws(() => decodeBytes(two, utf8('a,1\nb,2'), { format: 'csv' }), /ended in the middle of row 2/)
  assert.throws(() => decodeBytes(two, utf8('a,""\n'), { format: 'csv' }), (e: unknown) => e instanceof CodecError && /COPY row 1, column "b" \(int4\)/.test(e.message))
})

test('binary: malformed data is an error, never a row', () => {
  const one = cols(['n', 23])
  const good = hex(`${HEADER} 0001 00000004 00000007 ffff`)
  assert.deepStrictEqual(decodeBytes(one, good), [[7]])
  const bad: [string, RegExp][] = [
    [`5047434f50590aff0d0a01 00000000 00000000 ffff`, /signature/],
    [`5047434f50590aff0d0a00 00000001 00000000 ffff`, /critical flags/],
    [`5047434f50590aff0d0a00 00010000 00000000 ffff`, /OIDs/],
    [`5047434f50590aff0d0a00 00000000 ffffffff ffff`, /negative header extension/],
    [`${HEADER} 0002 00000004 00000007 ffffffff ffff`, /row 1 has 2 fields where 1 column was expected/],
    [`${HEADER} 0001 fffffffe ffff`, /length -2/],
    [`${HEADER} 0001 00000004 00000007 ffff 00`, /after the trailer/],
    [`${HEADER} 0001 00000003 000007 ffff`, /int4/],
  ]
  for (const [data, message] of bad) {
    assert.throws(() => decodeBytes(one, hex(data)), message, data)
  }
  assert.throws(() => decodeBytes(one, hex(`${HEADER} 0001 00000004 000000`)), /ended in the middle of row 1/)
  assert.throws(() => decodeBytes(one, hex(`${HEADER} 0001 00000004 00000007`)), /ended without its trailer/)
  assert.throws(() => decodeBytes(one, hex(`${HEADER.slice(0, 20)}`)), /ended before its header was complete/)
  assert.throws(() => decodeBytes(one, new Uint8Array(0)), /ended before its header/)
  // A header extension is skipped, whatever it holds.
  assert.deepStrictEqual(decodeBytes(one, hex(`5047434f50590aff0d0a00 00000000 00000003 aabbcc 0001 00000004 00000007 ffff`)), [[7]])
  assertEverySplit(one, hex(`5047434f50590aff0d0a00 00020000 00000003 aabbcc 0001 00000004 00000007 0001 ffffffff ffff`), [[7], [null]])
})

test('a decoder that failed refuses anything more', () => {
  const dec = decoder(cols(['n', 23]), { format: 'text' })
  const rows: unknown[] = []
  assert.throws(() => dec.push(utf8('x\n'), 0, 2, rows), CodecError)
  assert.throws(() => dec.push(utf8('1\n'), 0, 2, rows), CodecError)
  assert.throws(() => dec.finish(), CodecError)
  assert.deepStrictEqual(rows, [])
})

const WIDE = cols(['i', 23], ['t', 25], ['b', 17], ['a', 1007], ['j', 3802], ['at', 1184], ['n', 1700], ['u', 2950])
const WIDE_ROWS = [
  [1, 'tab\there "q", \\ \n', Buffer.from([0, 0x0a, 0x5c, 0xff]), [1, null, 3], { k: ['v\t', 2] }, new Date('2024-02-29T12:34:56.789Z'), '-12.500', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
  [2, '', Buffer.alloc(0), [], [], new Date(0), '0', '00000000-0000-0000-0000-000000000000'],
  [3, null, null, null, null, null, null, null],
]

test('every format: rows split at every byte decode the same', () => {
  for (const options of [{ format: 'binary' }, { format: 'text' }, { format: 'csv' }, { format: 'text', delimiter: ',' }, { format: 'csv', quote: '|', escape: '!' }] as CopyFormatOptions[]) {
    const bytes = encodeRows(WIDE, WIDE_ROWS, options)
    assertEverySplit(WIDE, bytes, WIDE_ROWS, options)
    // Two splits at every pair of positions on a smaller input.
    const small = encodeRows(WIDE, WIDE_ROWS.slice(1), options)
    for (let a = 0; a <= small.length; a += 3) {
      for (let b = a; b <= small.length; b += 5) {
        assert.deepStrictEqual(decodeChunks(WIDE, splitAt(small, a, b), options), WIDE_ROWS.slice(1), `${JSON.stringify(options)} at ${a}, ${b}`)
      }
    }
  }
})

test('rows as objects: keyed by column name, a later column of the same name winning, __proto__ kept as data', () => {
  const columns = cols(['a', 23], ['b', 25], ['a', 25], ['__proto__', 25])
  for (const format of ['binary', 'text', 'csv'] as const) {
    const bytes = encodeRows(columns, [[1, 'x', 'y', 'z']], { format })
    const [row] = decodeBytes(columns, bytes, { format, rowMode: 'object' }) as Record<string, unknown>[]
    assert.deepStrictEqual(Object.keys(row!), ['a', 'b', '__proto__'])
    assert.equal(row!.a, 'y')
    assert.equal(Object.getPrototypeOf(row), Object.prototype)
    assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')!.value, 'z')
  }
  assert.throws(() => createCopyDecoder(columns, catalog.view(), { rowMode: 'rows' as 'array' }), ArgumentError)
})

test('whole rows decode in place: no carried bytes, unescaped fields read straight from the payload', () => {
  for (const format of ['binary', 'text', 'csv'] as const) {
    const bytes = encodeRows(WIDE, WIDE_ROWS, { format })
    const dec = decoder(WIDE, { format })
    const rows: unknown[] = []
    dec.push(bytes, 0, bytes.length, rows)
    assert.equal((dec as unknown as { carried: number }).carried, 0)
    assert.equal((dec as unknown as { carry: Uint8Array }).carry.length, 0, `${format}: nothing was copied`)
    assert.equal(rows.length, 3)
  }
  // The decoder sees the payload itself for plain fields, a scratch buffer only for escaped ones.
  const seen: Uint8Array[] = []
  const view = {
    codec: () => ({ name: 'text', decodeText: (buf: Uint8Array, s: number, e: number) => (seen.push(buf), text(buf.subarray(s, e))), encodeText: String }),
    typeName: () => 'text',
  } as unknown as TypeView
  const payload = utf8('plain\tesc\\\\aped\n')
  const rows: unknown[] = []
  new TextCopyDecoder(cols(['a', 25], ['b', 25]), view, resolveCopyOptions({ format: 'text' }, 'text'), 'array').push(payload, 0, payload.length, rows)
  assert.deepStrictEqual(rows, [['plain', 'esc\\aped']])
  assert.equal(seen[0], payload)
  assert.notEqual(seen[1], payload)
  seen.length = 0
  const csv = utf8('plain,"quoted",dou""bled\n')
  new CsvCopyDecoder(cols(['a', 25], ['b', 25], ['c', 25]), view, resolveCopyOptions({ format: 'csv' }, 'csv'), 'array').push(csv, 0, csv.length, rows)
  assert.deepStrictEqual(rows[1], ['plain', 'quoted', 'doubled'])
  assert.deepStrictEqual(seen.map((b) => b === csv), [true, true, false])
})

test('decoded values never share memory with the payload', () => {
  for (const format of ['binary', 'text', 'csv'] as const) {
    const columns = cols(['b', 17], ['t', 25])
    const bytes = encodeRows(columns, [[Buffer.from('abc'), 'xyz']], { format })
    const [[b]] = decodeBytes(columns, bytes, { format }) as [[Buffer]]
    const dec = decoder(columns, { format })
    const rows: unknown[] = []
    dec.push(bytes, 0, bytes.length, rows)
    bytes.fill(0)
    assert.deepStrictEqual((rows[0] as unknown[])[0], b)
  }
})

// ------------------------------------------------------------------ encoding

test('a row that cannot be encoded names its row and column and leaves the writer as it was', () => {
  for (const format of ['binary', 'text', 'csv'] as const) {
    const enc = createCopyEncoder(SAMPLE, catalog, { format })
    const w = new Writer(32)
    enc.writeHeader(w)
    enc.encodeRow(w, SAMPLE_ROW)
    const before = w.length
    const snapshot = w.buf.slice(w.pos - before, w.pos)
    const bad: [unknown, RegExp, string | undefined][] = [
      [[1, 'x', null, true], /COPY row 2 has 4 values where 5 columns are copied/, undefined],
      ['a row', /must be an array of values or an object/, undefined],
      [null, /must be an array of values or an object/, undefined],
      [new Uint8Array(5), /must be an array of values or an object/, undefined],
      [[1, 'x', 12n, true, {}], /^COPY row 2, column "at" \(timestamptz\): /, 'at'],
      [{ id: 1.5 }, /^COPY row 2, column "id" \(int4\): int4 needs an integer/, 'id'],
      [{ id: 1, name: 'x', n: 2n ** 64n }, /column "n" \(int8\)/, 'n'],
      [{ id: 1, name: 'nul\0byte' }, /column "name" \(text\)/, 'name'],
    ]
    for (const [row, message, column] of bad) {
      assert.throws(
        () => enc.encodeRow(w, row as never),
        (e: unknown) => e instanceof CopyRowError && e.code === 'PG_PARAMETER' && e.row === 2 && e.column === column && message.test(e.message),
        `${format} ${String(row)}`,
      )
      assert.equal(w.length, before)
      assert.deepStrictEqual(w.buf.slice(w.pos - before, w.pos), snapshot)
    }
    assert.equal(enc.rowCount, 1)
    enc.encodeRow(w, { id: 2 })
    assert.equal(enc.rowCount, 2)
    enc.writeTrailer(w)
    assert.deepStrictEqual(decodeBytes(SAMPLE, w.take(), { format }), [SAMPLE_ROW, [2, null, null, null, null]])
  }
})

test('object rows: missing or undefined is NULL, extra keys are ignored, inherited names are not values', () => {
  const columns = cols(['constructor', 25], ['toString', 25], ['hasOwnProperty', 25], ['__proto__', 25], ['x', 23])
  for (const format of ['binary', 'text', 'csv'] as const) {
    const own = Object.defineProperty({ constructor: 'c' }, '__proto__', { value: 'p', enumerable: true })
    const rows = [{}, { x: undefined, y: 'extra' }, own, Object.assign(Object.create({ x: 5 }) as object, { toString: 't' })]
    assert.deepStrictEqual(decodeBytes(columns, encodeRows(columns, rows, { format }), { format }), [
      [null, null, null, null, null],
      [null, null, null, null, null],
      ['c', null, null, 'p', null],
      [null, 't', null, null, 5],
    ])
  }
})

test('binary: strings are parsed only where the codec reads them as the server would', () => {
  const one = (oid: number, value: unknown): Uint8Array => encodeRows(cols(['v', oid]), [[value]]).subarray(21, -2)
  const same = (oid: number, str: string, value: unknown) => assert.deepStrictEqual(one(oid, str), one(oid, value), `${oid} ${str}`)
  same(23, '42', 42)
  same(20, '-9223372036854775808', -(2n ** 63n))
  same(21, '-7', -7)
  same(701, '1e-5', 1e-5)
  same(16, 'f', false)
  same(17, '\\x00ff', Buffer.from([0, 255]))
  same(17, 'a\\\\b', Buffer.from('a\\b'))
  same(1007, '{1, 2 ,NULL}', [1, 2, null])
  same(3904, '[1,5]', { lower: 1, upper: 5, lowerInclusive: true, upperInclusive: true })
  same(1082, '2024-02-29', new Date('2024-02-29T00:00:00Z'))
  same(1182, '{2024-02-29,infinity}', [new Date('2024-02-29T00:00:00Z'), Infinity])
  same(1184, '2024-02-29 12:34:56.789+05:30', new Date('2024-02-29T07:04:56.789Z'))
  same(1184, '2024-02-29T07:04:56.789Z', new Date('2024-02-29T07:04:56.789Z'))
  same(1114, '2024-02-29T07:04:56', new Date('2024-02-29T07:04:56Z'))
  same(1184, 'infinity', Infinity)
  // Microseconds survive, though a Date cannot hold them.
  assert.deepStrictEqual(one(1184, '2000-01-01 00:00:00.000001+00'), hex('00000008 00000000 00000001'))
  assert.deepStrictEqual(one(1184, '1999-12-31T23:59:59.999999Z'), hex('00000008 ffffffff ffffffff'))
  // 2^32 + 5 microseconds: the sub-millisecond part carries into the high word.
  assert.deepStrictEqual(one(1114, '2000-01-01T01:11:34.967301'), hex('00000008 00000001 00000005'))
  assert.deepStrictEqual(one(1115, ['2000-01-01T00:00:00.000001', null]).subarray(-16), hex('00000008 00000000 00000001 ffffffff'))
  // Exactly: the server's value is what the same text would give it, checked by reading back.
  const back = (oid: number, v: unknown) => decodeBytes(cols(['v', oid]), encodeRows(cols(['v', oid]), [[v]]), {}, EXACT)
  assert.deepStrictEqual(back(1184, '0044-03-15T12:00:00.123456Z BC'), [['0044-03-15T12:00:00.123456Z BC']])
  assert.deepStrictEqual(back(1185, ['2024-01-01T00:00:00.5Z', '-infinity']), [[['2024-01-01T00:00:00.5Z', '-infinity']]])
  const [[range]] = back(3910, { lower: '2024-01-01T00:00:00.000007Z', upper: null, lowerInclusive: true, upperInclusive: false }) as [[Record<string, unknown>]]
  assert.deepStrictEqual({ ...range }, { lower: '2024-01-01T00:00:00.000007Z', upper: null, lowerInclusive: true, upperInclusive: false, empty: false })
  // json keeps its text exactly (binary json is the text); jsonb is a version byte and the text.
  assert.deepStrictEqual(one(114, '{"a":  1.000000000000000000001}'), utf8('\0\0\0\x1f{"a":  1.000000000000000000001}'))
  assert.deepStrictEqual(one(3802, '[1]'), hex('00000004 01 5b315d'))
  assert.deepStrictEqual(one(19, 'a name'), utf8('\0\0\0\x06a name'))

  const refused: [number, unknown, RegExp][] = [
    [23, ' 42', /could not read the string as int4/],
    [16, 'true', /bool/],
    [700, '0.1', /cannot write a string as float4 without the server parsing it/],
    [790, 12.5, /cannot write a number as money/],
    [790, '$1.00', /money/],
    [1186, '1 day', /interval/],
    [1184, '2024-02-29 12:34:56', /no UTC offset/],
    [1185, '{"2024-02-29 12:34:56+00"}', /timestamptz\[\]/],
    [1009, '{a,b}', /text\[\]/],
    [114, 5n, /json/],
    [1184, '294277-01-01 00:00:00+00', /timestamptz/],
    [1082, '300000-01-01', /date/],
    [1033, 'aclitem', /aclitem/],
  ]
  for (const [oid, value, message] of refused) {
    assert.throws(() => one(oid, value), (e: unknown) => e instanceof CopyRowError && message.test(e.message) && /format: 'text'|JSON/.test(e.message), `${oid} ${String(value)}`)
  }
})

test('binary decoding refuses a column type without a binary decoder; text and csv take it', () => {
  assert.throws(() => createCopyDecoder(cols(['acl', 1033]), catalog.view(), { format: 'binary' }), (e: unknown) => e instanceof ArgumentError && /"acl".*aclitem.*format 'text' or 'csv'/.test(e.message))
  assert.ok(createCopyDecoder(cols(['acl', 1033]), catalog.view(), { format: 'csv' }))
  assert.ok(new BinaryCopyDecoder(cols(['n', 23]), catalog.view()))
})
