import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ascii, assertCodecError, bytes, codecOf, decode, encodeBinary } from '../../../support/codecs/scalar-table.js'
import { checkText, hasLoneSurrogate } from '../../../../src/types/codecs/text-checks.js'
import { textCodec } from '../../../../src/types/codecs/text.js'

// Exact bytes for the textual scalar codecs: text types, "char", bytea, uuid,
// json, jsonb, jsonpath, pg_lsn, void and the text-only system types.

const TEXT = 25, VARCHAR = 1043, BPCHAR = 1042, NAME = 19, CHAR = 18, XML = 142, UNKNOWN = 705, REFCURSOR = 1790, CSTRING = 2275
const BYTEA = 17, UUID = 2950, JSON_ = 114, JSONB = 3802, JSONPATH = 4072, PG_LSN = 3220, VOID = 2278

const SAMPLES = ['', 'hello', 'héllo wörld', '日本語', '😀 emoji 𝄞', 'a\tb\nc', "quote ' and \\ backslash", 'x'.repeat(100000)]

test('text, varchar, bpchar, refcursor: UTF-8 in both formats, parameters in binary', () => {
  for (const oid of [TEXT, VARCHAR, BPCHAR, REFCURSOR]) {
    const c = codecOf(oid)
    for (const s of SAMPLES) {
      assert.equal(decode(c.decodeText, ascii(s)), s)
      assert.equal(decode(c.decodeBinary, ascii(s)), s)
      assert.deepEqual(encodeBinary(c, s), ascii(s))
      assert.equal(c.encodeText(s), s)
    }
    assert.deepEqual(encodeBinary(c, 42), ascii('42'))
    assert.deepEqual(encodeBinary(c, -1.5), ascii('-1.5'))
    assert.deepEqual(encodeBinary(c, 12345678901234567890n), ascii('12345678901234567890'))
    assert.deepEqual(encodeBinary(c, true), ascii('true'))
    assert.equal(c.encodeText(false), 'false')
    assertCodecError(() => encodeBinary(c, 'a\0b'), new RegExp(`^${c.name} cannot contain a NUL character$`))
    assertCodecError(() => c.encodeText('\0'), /cannot contain a NUL character/)
    for (const bad of ['\ud800', 'a\udc00b', 'x\ud83d', '\ude00\ud83d']) {
      assertCodecError(() => encodeBinary(c, bad), new RegExp(`^${c.name} value is not valid Unicode`))
      assertCodecError(() => c.encodeText(bad), /not valid Unicode/)
    }
    assertCodecError(() => encodeBinary(c, {}), new RegExp(`^${c.name} needs a string \\(or a number, bigint or boolean\\); got an object \\(Object\\)$`))
    assertCodecError(() => c.encodeText(null), /got null/)
    assertCodecError(() => c.encodeText(Symbol('s')), /got a symbol/)
    assertCodecError(() => c.encodeText(new Date(0)), /got a Date/)
  }
})

test('name, xml, unknown, cstring: strings; parameters always as text', () => {
  for (const oid of [NAME, XML, UNKNOWN, CSTRING]) {
    const c = codecOf(oid)
    assert.equal(c.encodeBinary, undefined, c.name)
    for (const s of ['', 'pg_class', 'naïve', '<a>é</a>']) {
      assert.equal(decode(c.decodeText, ascii(s)), s)
      assert.equal(decode(c.decodeBinary, ascii(s)), s)
      assert.equal(c.encodeText(s), s)
    }
    assertCodecError(() => c.encodeText('a\0'), /NUL/)
    assertCodecError(() => c.encodeText('\udfff'), /not valid Unicode/)
    assert.equal(c.encodeText(7), '7')
  }
})

test('textCodec: a factory for extension types that behave as text', () => {
  const c = textCodec('citext')
  assert.equal(c.name, 'citext')
  assert.equal(decode(c.decodeBinary, ascii('ÄbC')), 'ÄbC')
  assert.deepEqual(encodeBinary(c, 'ÄbC'), ascii('ÄbC'))
  assertCodecError(() => encodeBinary(c, []), /^citext needs a string/)
})

test('the lone-surrogate check without String.prototype.isWellFormed agrees with it', () => {
  const cases = ['', 'abc', '\ud83d\ude00', '\ud83d', '\ude00', 'a\ud83d\ud83d\ude00', '\ud83d\ude00\ude00', 'x\udbff\udfff', '\udbff']
  for (const s of cases) {
    const expected = !(s as unknown as { isWellFormed(): boolean }).isWellFormed()
    assert.equal(hasLoneSurrogate(s), expected, JSON.stringify(s))
  }
  assert.doesNotThrow(() => checkText('text', '\ud83d\ude00'))
})

test('"char": one byte; high bytes as PostgreSQL prints them (\\ooo)', () => {
  const c = codecOf(CHAR)
  assert.equal(c.name, 'char')
  assert.equal(decode(c.decodeBinary, bytes('61')), 'a')
  assert.equal(decode(c.decodeBinary, bytes('00')), '')
  assert.equal(decode(c.decodeBinary, bytes('5c')), '\\')
  assert.equal(decode(c.decodeBinary, bytes('81')), '\\201')
  assert.equal(decode(c.decodeBinary, bytes('ff')), '\\377')
  assert.equal(decode(c.decodeText, '\\201'), '\\201')
  assert.equal(decode(c.decodeText, ''), '')
  assertCodecError(() => decode(c.decodeBinary, bytes('6162')), /malformed "char"/)
  assertCodecError(() => decode(c.decodeBinary, bytes('')), /malformed "char"/)
  for (const [v, b] of [['a', '61'], ['', '00'], ['\\', '5c'], ['\\201', '81'], ['\\377', 'ff'], ['\\000', '00']] as const) {
    assert.deepEqual(encodeBinary(c, v), bytes(b), v)
    assert.equal(c.encodeText(v), v)
  }
  // PostgreSQL would keep only the first byte of these: refused instead.
  for (const v of ['ab', 'é', '\\400', '\\18', '\\1234', '\0']) {
    assertCodecError(() => encodeBinary(c, v), /^"char" holds one byte/)
    assertCodecError(() => c.encodeText(v), /"char" holds one byte/)
  }
  assertCodecError(() => encodeBinary(c, 65), /"char" needs a string/)
})

test('bytea: binary is a copy, a Buffer; text in hex and escape formats', () => {
  const c = codecOf(BYTEA)
  const raw = bytes('00 01 7f 80 ff 5c 27')
  const chunk = Buffer.concat([bytes('aabb'), raw, bytes('cc')])
  const out = c.decodeBinary!(chunk, 2, 2 + raw.length) as Buffer
  assert.ok(Buffer.isBuffer(out))
  assert.deepEqual(out, raw)
  chunk.fill(0)
  assert.deepEqual(out, raw, 'not a view of the chunk')
  assert.deepEqual(decode(c.decodeBinary, bytes('')), Buffer.alloc(0))
  const large = Buffer.alloc(1 << 20, 0xab)
  assert.deepEqual(decode(c.decodeBinary, large), large)

  assert.deepEqual(decode(c.decodeText, '\\x00017f80ff5c27'), raw)
  assert.deepEqual(decode(c.decodeText, '\\x00017F80FF5C27'), raw)
  assert.deepEqual(decode(c.decodeText, '\\x'), Buffer.alloc(0))
  assert.ok(Buffer.isBuffer(decode(c.decodeText, '\\xab')))
  // Escape format, as bytea_output = 'escape' prints it.
  assert.deepEqual(decode(c.decodeText, "\\000\\001\\177\\200\\377\\\\'"), raw)
  assert.deepEqual(decode(c.decodeText, 'abc'), ascii('abc'))
  assert.deepEqual(decode(c.decodeText, ''), Buffer.alloc(0))
  assert.deepEqual(decode(c.decodeText, 'a\\\\\\\\b'), ascii('a\\\\b'))
  for (const bad of ['\\x0', '\\x0g', '\\xzz', '\\', 'a\\', '\\4', '\\12', '\\400', '\\08a', 'a\\b']) {
    assertCodecError(() => decode(c.decodeText, bad), /malformed bytea/)
  }

  assert.deepEqual(encodeBinary(c, raw), raw)
  assert.deepEqual(encodeBinary(c, new Uint8Array([1, 2, 3]).subarray(1)), bytes('0203'))
  assert.deepEqual(encodeBinary(c, new Uint8Array(0)), Buffer.alloc(0))
  assert.deepEqual(encodeBinary(c, large), large)
  assert.equal(encodeBinary(c, '\\x00'), false)
  assert.equal(c.encodeText(raw), '\\x00017f80ff5c27')
  assert.equal(c.encodeText(new Uint8Array(0)), '\\x')
  assert.equal(c.encodeText('\\xff'), '\\xff')
  assertCodecError(() => encodeBinary(c, new Float32Array(2)), /^bytea needs a Uint8Array, a Buffer or a string; got an object \(Float32Array\)$/)
  assertCodecError(() => encodeBinary(c, new Uint16Array(2)), /Uint16Array/)
  assertCodecError(() => c.encodeText(new DataView(new ArrayBuffer(1))), /DataView/)
  assertCodecError(() => encodeBinary(c, [1, 2]), /got an array/)
  assertCodecError(() => encodeBinary(c, 5), /got a number/)
})

test('uuid: canonical lowercase strings; binary from 32 hex digits with or without dashes', () => {
  const c = codecOf(UUID)
  const cases: [string, string][] = [
    ['00000000-0000-0000-0000-000000000000', '00000000000000000000000000000000'],
    ['ffffffff-ffff-ffff-ffff-ffffffffffff', 'ffffffffffffffffffffffffffffffff'],
    ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0eebc999c0b4ef8bb6d6bb9bd380a11'],
  ]
  for (const [text, bin] of cases) {
    assert.equal(decode(c.decodeText, text), text)
    assert.equal(decode(c.decodeBinary, bytes(bin)), text)
    assert.deepEqual(encodeBinary(c, text), bytes(bin))
    assert.deepEqual(encodeBinary(c, text.toUpperCase()), bytes(bin))
    assert.deepEqual(encodeBinary(c, bin), bytes(bin))
    assert.deepEqual(encodeBinary(c, bin.toUpperCase()), bytes(bin))
    assert.equal(c.encodeText(text), text)
  }
  for (const other of ['{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', 'a0eebc999c0b-4ef8-bb6d-6bb9bd380a11', 'a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g', 'a0eebc99x9c0b-4ef8-bb6d-6bb9bd380a11', '', 'not a uuid', 'a0eebc999c0b4ef8bb6d6bb9bd380a1é']) {
    assert.equal(encodeBinary(c, other), false, other)
  }
  for (const bad of ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 'a0eebc999c0b4ef8bb6d6bb9bd380a11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g', 'a0eebc99-9c0b-4ef8-bb6d_6bb9bd380a11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9-d380a11']) {
    assertCodecError(() => decode(c.decodeText, bad), /malformed uuid/)
  }
  assertCodecError(() => decode(c.decodeBinary, bytes('00')), /binary uuid/)
  assertCodecError(() => encodeBinary(c, 5), /^uuid needs a string; got a number$/)
  assertCodecError(() => c.encodeText(new Uint8Array(16)), /uuid needs a string; got a Uint8Array/)
})

test('json and jsonb: parsed values; jsonb binary has a version byte; strings pass through as JSON text', () => {
  const json = codecOf(JSON_)
  const jsonb = codecOf(JSONB)
  const doc = '{"a": [1, 2.5, "é😀", null, true], "b": {}}'
  const value = { a: [1, 2.5, 'é😀', null, true], b: {} }
  assert.deepStrictEqual(decode(json.decodeText, ascii(doc)), value)
  assert.deepStrictEqual(decode(json.decodeBinary, ascii(doc)), value)
  assert.deepStrictEqual(decode(jsonb.decodeText, ascii(doc)), value)
  assert.deepStrictEqual(decode(jsonb.decodeBinary, Buffer.concat([bytes('01'), ascii(doc)])), value)
  assert.equal(decode(jsonb.decodeBinary, Buffer.concat([bytes('01'), ascii('"x"')])), 'x')
  assert.equal(decode(json.decodeText, 'null'), null)
  assert.equal(decode(json.decodeText, '12'), 12)
  assertCodecError(() => decode(jsonb.decodeBinary, Buffer.concat([bytes('02'), ascii('1')])), /malformed jsonb value: unknown binary format version/)
  assertCodecError(() => decode(jsonb.decodeBinary, bytes('')), /unknown binary format version/)
  assertCodecError(() => decode(json.decodeText, '{'), /^malformed json value/)
  assertCodecError(() => decode(jsonb.decodeBinary, Buffer.concat([bytes('01'), ascii('{')])), /^malformed jsonb value/)

  assert.deepEqual(encodeBinary(json, { a: [1, 'x'] }), ascii('{"a":[1,"x"]}'))
  assert.deepEqual(encodeBinary(jsonb, { a: [1, 'x'] }), Buffer.concat([bytes('01'), ascii('{"a":[1,"x"]}')]))
  assert.deepEqual(encodeBinary(jsonb, null), Buffer.concat([bytes('01'), ascii('null')]))
  assert.deepEqual(encodeBinary(json, 5), ascii('5'))
  assert.deepEqual(encodeBinary(json, false), ascii('false'))
  assert.deepEqual(encodeBinary(json, [undefined, 'é']), ascii('[null,"é"]'))
  assert.deepEqual(encodeBinary(json, { d: new Date(0), u: undefined }), ascii('{"d":"1970-01-01T00:00:00.000Z"}'))
  // JSON.stringify escapes what text cannot hold.
  assert.deepEqual(encodeBinary(jsonb, ['\0\ud800']), Buffer.concat([bytes('01'), ascii('["\\u0000\\ud800"]')]))
  // A string is JSON text already.
  assert.equal(encodeBinary(json, '{"raw": true}'), false)
  assert.equal(encodeBinary(jsonb, '[1]'), false)
  assert.equal(json.encodeText('{"raw": true}'), '{"raw": true}')
  assert.equal(jsonb.encodeText({ x: 'é' }), '{"x":"é"}')
  assert.equal(jsonb.encodeText(null), 'null')
  assertCodecError(() => jsonb.encodeText('"\0"'), /jsonb cannot contain a NUL character/)
  for (const c of [json, jsonb]) {
    assertCodecError(() => encodeBinary(c, undefined), new RegExp(`^${c.name} needs a value JSON can represent, or a string of JSON text; got undefined$`))
    assertCodecError(() => encodeBinary(c, () => 1), /got a function/)
    assertCodecError(() => c.encodeText(Symbol('x')), /got a symbol/)
    assertCodecError(() => encodeBinary(c, { n: 1n }), new RegExp(`^${c.name} parameter cannot be serialised as JSON: .*BigInt`))
    assertCodecError(() => c.encodeText(10n), /BigInt/)
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    assertCodecError(() => encodeBinary(c, cyclic), /cannot be serialised as JSON: .*circular/)
  }
})

test('jsonpath: a string; binary has a version byte', () => {
  const c = codecOf(JSONPATH)
  assert.equal(decode(c.decodeText, '$."a"'), '$."a"')
  assert.equal(decode(c.decodeBinary, Buffer.concat([bytes('01'), ascii('$."a"[*]')])), '$."a"[*]')
  assertCodecError(() => decode(c.decodeBinary, Buffer.concat([bytes('00'), ascii('$')])), /malformed jsonpath/)
  assertCodecError(() => decode(c.decodeBinary, bytes('')), /malformed jsonpath/)
  assert.equal(c.encodeText('$.a'), '$.a')
  assert.equal(c.encodeBinary, undefined)
  assertCodecError(() => c.encodeText({}), /^jsonpath needs a string; got an object/)
})

test('pg_lsn: hi/lo in upper-case hex without leading zeros; uint64 binary', () => {
  const c = codecOf(PG_LSN)
  const cases: [string, string, bigint][] = [
    ['0/0', '0000000000000000', 0n],
    ['0/1', '0000000000000001', 1n],
    ['16/B374D848', '00000016b374d848', 0x16b374d848n],
    ['FFFFFFFF/FFFFFFFF', 'ffffffffffffffff', 2n ** 64n - 1n],
    ['1/0', '0000000100000000', 2n ** 32n],
  ]
  for (const [text, bin, n] of cases) {
    assert.equal(decode(c.decodeText, text), text)
    assert.equal(decode(c.decodeBinary, bytes(bin)), text)
    assert.deepEqual(encodeBinary(c, text), bytes(bin))
    assert.deepEqual(encodeBinary(c, text.toLowerCase()), bytes(bin))
    assert.deepEqual(encodeBinary(c, n), bytes(bin))
    assert.equal(c.encodeText(n), text)
  }
  assert.deepEqual(encodeBinary(c, '00000016/0B374D84'), bytes('00000016 0b374d84'))
  for (const other of ['', '/', '1/', '/1', '123456789/0', '0/123456789', '1/2/3', 'g/0', ' 0/1', '0x1/2']) assert.equal(encodeBinary(c, other), false, other)
  for (const bad of ['', '/', '1/', '/1', '123456789/0', '1/2/3', 'g/0', '1-2']) assertCodecError(() => decode(c.decodeText, bad), /malformed pg_lsn/)
  assertCodecError(() => encodeBinary(c, 2n ** 64n), /^value out of range for pg_lsn$/)
  assertCodecError(() => encodeBinary(c, -1n), /out of range for pg_lsn/)
  assertCodecError(() => encodeBinary(c, 5), /^pg_lsn needs a string such as '16\/B374D848' or a bigint; got a number$/)
  assertCodecError(() => decode(c.decodeBinary, bytes('00000000')), /binary pg_lsn/)
})

test('void: null in both formats; cannot be a parameter', () => {
  const c = codecOf(VOID)
  assert.equal(decode(c.decodeText, ''), null)
  assert.equal(decode(c.decodeBinary, bytes('')), null)
  assertCodecError(() => decode(c.decodeText, 'x'), /malformed void/)
  assertCodecError(() => decode(c.decodeBinary, bytes('00')), /malformed void/)
  assertCodecError(() => c.encodeText(null), /void values cannot be sent as parameters/)
  assert.equal(c.encodeBinary, undefined)
})

test('text-only system types: strings, results requested in text', () => {
  for (const [oid, name] of [[1033, 'aclitem'], [2970, 'txid_snapshot'], [5038, 'pg_snapshot'], [3361, 'pg_ndistinct'], [3402, 'pg_dependencies'], [5017, 'pg_mcv_list'], [4600, 'pg_brin_bloom_summary'], [4601, 'pg_brin_minmax_multi_summary']] as const) {
    const c = codecOf(oid)
    assert.equal(c.name, name)
    assert.equal(c.decodeBinary, undefined)
    assert.equal(c.encodeBinary, undefined)
    assert.equal(decode(c.decodeText, '760:760:'), '760:760:')
    assert.equal(c.encodeText('1:2:'), '1:2:')
  }
  const tree = codecOf(194)
  assert.equal(decode(tree.decodeBinary, ascii('({QUERY :commandType 1})')), '({QUERY :commandType 1})')
})

test('bytea without a global Buffer (the browser build): plain Uint8Array copies', async () => {
  const saved = globalThis.Buffer
  let mod: typeof import('../../../../src/types/codecs/bytea.js')
  try {
    Reflect.deleteProperty(globalThis, 'Buffer')
    assert.equal((globalThis as { Buffer?: unknown }).Buffer, undefined)
    // A fresh instance of the module, which looks for Buffer when it loads.
    mod = (await import(new URL('../../../../src/types/codecs/bytea.js?without-buffer', import.meta.url).href)) as typeof mod
  } finally {
    globalThis.Buffer = saved
  }
  const chunk = Uint8Array.of(9, 9, 1, 2, 3, 9)
  const out = mod.byteaCodec.decodeBinary!(chunk, 2, 5) as Uint8Array
  assert.equal(Object.getPrototypeOf(out), Uint8Array.prototype)
  assert.deepEqual([...out], [1, 2, 3])
  chunk.fill(0)
  assert.deepEqual([...out], [1, 2, 3], 'a copy')
  const text = new TextEncoder().encode('\\x0102')
  const fromText = mod.byteaCodec.decodeText(text, 0, text.length) as Uint8Array
  assert.equal(Object.getPrototypeOf(fromText), Uint8Array.prototype)
  assert.deepEqual([...fromText], [1, 2])
})
