// The generated reader of kept rows (src/types/row-reader.ts) against
// RowPlan.object(), the constructor rows it replaces for query(): the same
// keys in the same order, the same values, the same errors for every malformed
// DataRow, and no column name that can be read as code.

import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { ProtocolError } from '../../../src/errors.js'
import { utf8Read } from '../../../src/protocol/utf8.js'
import type { Decoder } from '../../../src/types/codec.js'
import { int4Codec } from '../../../src/types/codecs/integers.js'
import { RowPlan } from '../../../src/types/row-plan.js'
import { rowReader } from '../../../src/types/row-reader.js'

function dataRow(values: readonly (string | null)[]): Buffer {
  const parts: Buffer[] = [Buffer.from([values.length >> 8, values.length & 0xff])]
  for (const v of values) {
    const len = Buffer.alloc(4)
    len.writeInt32BE(v === null ? -1 : Buffer.byteLength(v))
    parts.push(len)
    if (v !== null) parts.push(Buffer.from(v))
  }
  return Buffer.concat(parts)
}

const text: Decoder = utf8Read
const int4: Decoder = int4Codec.decodeText

/** The error a call throws, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  return undefined
}

test('kept rows equal object rows: keys, order, values, NULLs, duplicate and hostile names', () => {
  const names = ['id', 'a', 'a', '0', '12', 'constructor', 'toString', 'x"; process.exit(3); "', '${process.exit(4)}', 'line\nbreak', '\u2028', 'é', '']
  const plan = new RowPlan(
    names.map((name, i) => ({ name, typeOid: i === 0 ? 23 : 25 })),
    names.map((_, i) => (i === 0 ? int4 : text)),
  )
  const values = names.map((_, i) => (i === 0 ? '42' : i % 4 === 2 ? null : `v${i}`))
  const data = dataRow(values)
  const kept = plan.kept(data, 0, data.length)
  const object = plan.object(data, 0, data.length)
  assert.deepStrictEqual(kept, object)
  assert.deepEqual(Object.keys(kept), Object.keys(object))
  assert.equal(Object.getPrototypeOf(kept), Object.prototype)
  assert.equal(kept.id, 42)
  // The later of two columns of one name wins, as in object rows.
  assert.equal(kept.a, null)
  assert.equal(kept['x"; process.exit(3); "'], values[7])
})

test('a column named __proto__ is an own property of a kept row, never its prototype', () => {
  const plan = new RowPlan(
    [
      { name: 'a', typeOid: 23 },
      { name: '__proto__', typeOid: 25 },
    ],
    [int4, text],
  )
  const data = dataRow(['7', '{"polluted":true}'])
  const row = plan.kept(data, 0, data.length)
  assert.equal(Object.getPrototypeOf(row), Object.prototype)
  assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')!.value, '{"polluted":true}')
  assert.equal(rowReader(['a', '__proto__'], [int4, text], { malformed: Error as never, count: Error as never, truncated: Error as never }), null)
})

test('kept rows throw what object rows throw for every cut, extra byte, wrong count and bad length', () => {
  const plan = new RowPlan(
    [
      { name: 'a', typeOid: 25 },
      { name: 'b', typeOid: 25 },
    ],
    [text, text],
  )
  const data = dataRow(['hello', 'world'])
  const same = (bytes: Buffer, start: number, end: number, what: string): void => {
    const a = thrown(() => plan.kept(bytes, start, end))
    const b = thrown(() => plan.object(bytes, start, end))
    assert.ok(a instanceof ProtocolError, `${what}: kept threw ${String(a)}`)
    assert.ok(b instanceof ProtocolError, `${what}: object threw ${String(b)}`)
    assert.equal(a.message, b.message, what)
  }
  for (let cut = 0; cut < data.length; cut++) same(data, 0, cut, `cut at ${cut}`)
  const extra = Buffer.concat([data, Buffer.from([1])])
  same(extra, 0, extra.length, 'an extra byte')
  const one = dataRow(['x'])
  same(one, 0, one.length, 'one column of two')
  assert.match((thrown(() => plan.kept(one, 0, one.length)) as Error).message, /1 columns where the RowDescription has 2/)
  const negative = Buffer.from(data)
  negative.writeInt32BE(-2, 2)
  same(negative, 0, negative.length, 'length -2')
  // At an offset inside a larger buffer, as rows sit in a socket read.
  const inside = Buffer.concat([Buffer.from([9, 9, 9]), data, Buffer.from([9])])
  assert.deepStrictEqual(plan.kept(inside, 3, 3 + data.length), { a: 'hello', b: 'world' })
})

test('a row of one column named "" is not made by the constructor of a row with no columns', () => {
  // Both lists of names join to '': the constructors they share must still tell them apart.
  const none = new RowPlan([], [])
  const empty = dataRow([])
  assert.deepStrictEqual(none.object(empty, 0, empty.length), {})
  const one = new RowPlan([{ name: '', typeOid: 25 }], [text])
  const data = dataRow([null])
  assert.deepStrictEqual(one.object(data, 0, data.length), { '': null })
  assert.deepStrictEqual(one.kept(data, 0, data.length), { '': null })
})

test('kept rows equal object rows for any names and values (property)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.string({ maxLength: 12 }), fc.option(fc.string({ maxLength: 40 }), { nil: null })), { minLength: 1, maxLength: 30 }),
      (cols) => {
        const names = cols.map(([n]) => n)
        const plan = new RowPlan(
          names.map((name) => ({ name, typeOid: 25 })),
          names.map(() => text),
        )
        const data = dataRow(cols.map(([, v]) => v))
        const kept = plan.kept(data, 0, data.length)
        const object = plan.object(data, 0, data.length)
        assert.deepStrictEqual(kept, object)
        assert.deepEqual(Object.keys(kept), Object.keys(object))
      },
    ),
    { numRuns: 300 },
  )
})

test('plans with the same columns and decoders share one reader; other decoders get their own', () => {
  const errors = { malformed: () => new Error('m'), count: () => new Error('c'), truncated: () => new Error('t') }
  const a = rowReader(['p', 'q'], [text, int4], errors)
  assert.ok(a !== null)
  assert.equal(rowReader(['p', 'q'], [text, int4], errors), a)
  assert.notEqual(rowReader(['p', 'q'], [int4, text], errors), a)
  assert.notEqual(rowReader(['p', 'r'], [text, int4], errors), a)
})

test('where code generation is forbidden, kept rows are still made', () => {
  const plan = fileURLToPath(new URL('../../../src/types/row-plan.js', import.meta.url))
  const script = `
    const { RowPlan } = await import(${JSON.stringify(plan)})
    const dec = (b, s, e) => Buffer.from(b.subarray(s, e)).toString()
    const p = new RowPlan([{ name: 'a', typeOid: 25 }, { name: 'b', typeOid: 25 }], [dec, dec])
    const row = Buffer.from([0, 2, 0, 0, 0, 1, 120, 255, 255, 255, 255])
    console.log(JSON.stringify(p.kept(row, 0, row.length)))`
  const r = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), '{"a":"x","b":null}')
})
