import { test } from 'node:test'
import assert from 'node:assert/strict'
import { utf8Read } from '../../../src/protocol/utf8.js'
import { int4Codec } from '../../../src/types/codecs/integers.js'
import { toText, writeTextParam, dateText } from '../../../src/types/text-params.js'
import { RowPlan } from '../../../src/types/row-plan.js'
import { Writer } from '../../../src/protocol/writer.js'
import { ParameterError, ProtocolError } from '../../../src/errors.js'

test('parameters as text', () => {
  assert.equal(toText('x', 1), 'x')
  assert.equal(toText(1.25, 1), '1.25')
  assert.equal(toText(NaN, 1), 'NaN')
  assert.equal(toText(-Infinity, 1), '-Infinity')
  assert.equal(toText(10n ** 30n, 1), '1000000000000000000000000000000')
  assert.equal(toText(true, 1), 't')
  assert.equal(toText(null, 1), null)
  assert.equal(toText(undefined, 1), null)
  assert.equal(toText(Buffer.from([1, 171]), 1), '\\x01ab')
  assert.equal(toText({ a: [1, '2'] }, 1), '{"a":[1,"2"]}')
  assert.equal(toText([[1, 2], [null, 4]], 1), '{{"1","2"},{NULL,"4"}}')
  assert.equal(toText(['a"b\\c', ''], 1), '{"a\\"b\\\\c",""}')
  assert.equal(toText(new Date(Date.UTC(2020, 0, 2, 3, 4, 5, 6)), 1), '2020-01-02 03:04:05.006+00')
})

test('dates outside years 1..9999 are written the way PostgreSQL reads them', () => {
  const bc = new Date(Date.UTC(0, 0, 1))
  bc.setUTCFullYear(-43)
  assert.equal(dateText(bc, 1), '0044-01-01 00:00:00.000+00 BC')
  const far = new Date(Date.UTC(12345, 5, 6))
  assert.equal(dateText(far, 1), '12345-06-06 00:00:00.000+00')
})

test('parameters that cannot be sent name their position', () => {
  assert.throws(() => toText(Symbol('s'), 3), (e: unknown) => e instanceof ParameterError && e.index === 3 && /\$3 is a symbol/.test(e.message))
  assert.throws(() => toText(() => 1, 2), (e: unknown) => e instanceof ParameterError && e.index === 2)
  assert.throws(() => toText(new Float32Array(2), 1), (e: unknown) => e instanceof ParameterError && /Float32Array/.test(e.message))
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic
  assert.throws(() => toText(cyclic, 4), (e: unknown) => e instanceof ParameterError && e.index === 4 && /JSON/.test(e.message))
  assert.throws(() => toText(new Date('nope'), 5), (e: unknown) => e instanceof ParameterError && /invalid Date/.test(e.message))
})

test('writeTextParam writes a length and UTF-8 bytes, or -1 for NULL', () => {
  const w = new Writer(8)
  writeTextParam(w, 'é', 1)
  writeTextParam(w, null, 2)
  assert.deepEqual([...w.take()], [0, 0, 0, 2, 0xc3, 0xa9, 255, 255, 255, 255])
})

function row(values: (string | null)[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0, values.length])]
  for (const v of values) {
    const len = Buffer.alloc(4)
    if (v === null) len.writeInt32BE(-1)
    else len.writeInt32BE(Buffer.byteLength(v))
    parts.push(len)
    if (v !== null) parts.push(Buffer.from(v))
  }
  return Buffer.concat(parts)
}

test('row plan: objects and arrays, NULLs, duplicate names, __proto__ safely', () => {
  const plan = new RowPlan(
    [
      { name: 'a', typeOid: 23 },
      { name: '__proto__', typeOid: 25 },
      { name: 'a', typeOid: 25 },
    ],
    [int4Codec.decodeText, utf8Read, utf8Read],
  )
  const data = row(['7', 'p', null])
  const obj = plan.object(data, 0, data.length)
  assert.equal(Object.getPrototypeOf(obj), Object.prototype)
  assert.deepEqual(Object.keys(obj), ['a', '__proto__'])
  assert.equal(obj.a, null)
  assert.equal(Object.getOwnPropertyDescriptor(obj, '__proto__')!.value, 'p')
  assert.deepEqual(plan.array(data, 0, data.length), [7, 'p', null])
})

test('row plan: structural errors are protocol errors at every truncation', () => {
  const plan = new RowPlan([{ name: 'a', typeOid: 25 }, { name: 'b', typeOid: 25 }], [utf8Read, utf8Read])
  const data = row(['hello', 'world'])
  for (let cut = 0; cut < data.length; cut++) {
    assert.throws(() => plan.object(data, 0, cut), ProtocolError, `object cut at ${cut}`)
    assert.throws(() => plan.array(data, 0, cut), ProtocolError, `array cut at ${cut}`)
    // A lazy row checks the structure when it arrives, not when a column is read.
    assert.throws(() => plan.lazy(data, 0, cut), ProtocolError, `lazy cut at ${cut}`)
  }
  const extra = Buffer.concat([data, Buffer.from([1])])
  assert.throws(() => plan.object(extra, 0, extra.length), ProtocolError)
  assert.throws(() => plan.lazy(extra, 0, extra.length), ProtocolError)
  const wrongCount = row(['x'])
  assert.throws(() => plan.array(wrongCount, 0, wrongCount.length), /1 columns where the RowDescription has 2/)
  assert.throws(() => plan.lazy(wrongCount, 0, wrongCount.length), /1 columns where the RowDescription has 2/)
  const negative = Buffer.from(data)
  negative.writeInt32BE(-2, 2)
  assert.throws(() => plan.lazy(negative, 0, negative.length), ProtocolError)
  // At an offset inside a larger buffer, as rows sit in a socket read.
  const inside = Buffer.concat([Buffer.from([9, 9, 9]), data, Buffer.from([9])])
  const lazy = plan.lazy(inside, 3, 3 + data.length)
  assert.deepEqual([lazy.b, lazy.a], ['world', 'hello'])
})
