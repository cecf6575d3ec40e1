// pgoutput decoding on hand-built messages: every message type, tuples with
// nulls, unchanged TOAST values, text and binary values, the xid of streamed
// changes, and malformed bytes refused with an error naming the message. Also
// the Standby Status Update's exact bytes and the Lsn type.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ProtocolError } from '../../../src/errors.js'
import { decodePrimaryKeepalive, decodeXLogData, writeStandbyStatusUpdate, PG_EPOCH_MICROS } from '../../../src/protocol/replication.js'
import { Writer } from '../../../src/protocol/writer.js'
import { Lsn } from '../../../src/types/lsn.js'
import { unchangedToast, type ChangeMessage } from '../../../src/replication/messages.js'
import { PgoutputDecoder } from '../../../src/replication/pgoutput.js'
import { TypeCatalog } from '../../../src/types/catalog.js'

/** Builds message bodies: bytes, big-endian integers, C strings. */
class B {
  private readonly parts: number[] = []
  u8(...v: number[]): this {
    this.parts.push(...v)
    return this
  }
  ch(c: string): this {
    return this.u8(c.charCodeAt(0))
  }
  i16(v: number): this {
    return this.u8((v >> 8) & 0xff, v & 0xff)
  }
  i32(v: number): this {
    return this.u8((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff)
  }
  i64(v: bigint): this {
    return this.i32(Number((v >> 32n) & 0xffffffffn)).i32(Number(v & 0xffffffffn))
  }
  str(s: string): this {
    return this.u8(...Buffer.from(s), 0)
  }
  text(s: string): this {
    const b = Buffer.from(s)
    return this.ch('t').i32(b.length).u8(...b)
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.parts)
  }
}

const view = new TypeCatalog().view()
const at = Lsn.from('0/100')
const decoder = (protoVersion = 1) => new PgoutputDecoder(view, { protoVersion, parallel: false })
const decode = (d: PgoutputDecoder, b: B): ChangeMessage => {
  // Inside a larger buffer, to check that offsets are honoured.
  const body = b.bytes()
  const buf = new Uint8Array(body.length + 6)
  buf.set(body, 3)
  return d.decode(buf, 3, 3 + body.length, at)!
}

// 2000-01-01 plus one second, in microseconds.
const T = 1_000_000n
const relation = (id = 16384) =>
  new B().ch('R').i32(id).str('public').str('items').ch('d').i16(3)
    .u8(1).str('id').i32(23).i32(-1)
    .u8(0).str('name').i32(25).i32(-1)
    .u8(0).str('at').i32(1184).i32(-1)

describe('pgoutput decoding', () => {
  test('begin, relation, insert, update, delete, truncate, message, origin, type, commit', () => {
    const d = decoder()
    assert.deepEqual(decode(d, new B().ch('B').i64(0x200n).i64(T).i32(77)), { type: 'begin', lsn: at, xid: 77, commitLsn: Lsn.from('0/200'), commitTime: new Date(946684801000) })
    const r = decode(d, relation())
    assert.ok(r.type === 'relation')
    assert.deepEqual(r.relation.columns.map((c) => [c.name, c.typeOid, c.key]), [['id', 23, true], ['name', 25, false], ['at', 1184, false]])
    const ins = decode(d, new B().ch('I').i32(16384).ch('N').i16(3).text('5').ch('n').text('2024-02-29 12:00:00+00'))
    assert.ok(ins.type === 'insert')
    assert.deepEqual(ins.row, { id: 5, name: null, at: new Date('2024-02-29T12:00:00Z') })
    assert.equal(ins.schema, 'public')
    assert.equal(ins.table, 'items')
    const upd = decode(d, new B().ch('U').i32(16384).ch('K').i16(3).text('5').ch('n').ch('n').ch('N').i16(3).text('6').ch('u').text('2024-01-01 00:00:00+00'))
    assert.ok(upd.type === 'update')
    assert.deepEqual(upd.key, { id: 5 }, 'an old key keeps only the key columns')
    assert.equal(upd.row.name, unchangedToast)
    const old = decode(d, new B().ch('U').i32(16384).ch('O').i16(3).text('6').text('x').ch('n').ch('N').i16(3).text('6').text('y').ch('n'))
    assert.ok(old.type === 'update')
    assert.deepEqual(old.old, { id: 6, name: 'x', at: null })
    const del = decode(d, new B().ch('D').i32(16384).ch('K').i16(3).text('6').ch('n').ch('n'))
    assert.ok(del.type === 'delete')
    assert.deepEqual(del.key, { id: 6 })
    const tr = decode(d, new B().ch('T').i32(1).u8(3).i32(16384))
    assert.ok(tr.type === 'truncate')
    assert.deepEqual([tr.tables, tr.cascade, tr.restartIdentity], [[{ schema: 'public', table: 'items' }], true, true])
    const msg = decode(d, new B().ch('M').u8(1).i64(0x300n).str('pfx').i32(2).u8(0x68, 0x69))
    assert.ok(msg.type === 'message')
    assert.deepEqual([msg.transactional, String(msg.messageLsn), msg.prefix, Buffer.from(msg.content).toString()], [true, '0/300', 'pfx', 'hi'])
    const origin = decode(d, new B().ch('O').i64(0x400n).str('node_a'))
    assert.deepEqual(origin, { type: 'origin', lsn: at, originLsn: Lsn.from('0/400'), name: 'node_a' })
    const type = decode(d, new B().ch('Y').i32(90000).str('public').str('mood'))
    assert.deepEqual(type, { type: 'type', lsn: at, oid: 90000, schema: 'public', name: 'mood' })
    const commit = decode(d, new B().ch('C').u8(0).i64(0x200n).i64(0x230n).i64(T))
    assert.deepEqual(commit, { type: 'commit', lsn: at, xid: 77, commitLsn: Lsn.from('0/200'), endLsn: Lsn.from('0/230'), commitTime: new Date(946684801000) })
  })

  test('a Relation message sent again replaces the columns for the rows that follow', () => {
    const d = decoder()
    decode(d, relation())
    decode(d, new B().ch('R').i32(16384).str('public').str('items').ch('f').i16(1).u8(0).str('n').i32(1700).i32(-1))
    const ins = decode(d, new B().ch('I').i32(16384).ch('N').i16(1).text('1.50'))
    assert.ok(ins.type === 'insert')
    assert.deepEqual(ins.row, { n: '1.50' })
  })

  test('binary values use the binary codecs; a type without one comes as bytes', () => {
    const d = decoder()
    decode(d, new B().ch('R').i32(1).str('s').str('t').ch('d').i16(2).u8(1).str('a').i32(20).i32(-1).u8(0).str('b').i32(99999).i32(-1))
    const ins = decode(d, new B().ch('I').i32(1).ch('N').i16(2).ch('b').i32(8).i64(-5n).ch('b').i32(2).u8(1, 2))
    assert.ok(ins.type === 'insert')
    assert.equal(ins.row.a, -5n)
    assert.deepEqual([...(ins.row.b as Uint8Array)], [1, 2])
  })

  test('streamed transactions: changes carry their xid between Stream Start and Stream Stop (protocol 2+)', () => {
    const d = decoder(2)
    assert.deepEqual(decode(d, new B().ch('S').i32(900).u8(1)), { type: 'streamStart', lsn: at, xid: 900, first: true })
    decode(d, new B().ch('R').i32(900).i32(5).str('s').str('t').ch('d').i16(1).u8(1).str('id').i32(23).i32(-1))
    const ins = decode(d, new B().ch('I').i32(900).i32(5).ch('N').i16(1).text('1'))
    assert.ok(ins.type === 'insert' && ins.xid === 900)
    assert.deepEqual(decode(d, new B().ch('E')), { type: 'streamStop', lsn: at })
    assert.deepEqual(decode(d, new B().ch('A').i32(900).i32(901)), { type: 'streamAbort', lsn: at, xid: 900, subxid: 901 })
    const c = decode(d, new B().ch('c').i32(900).u8(0).i64(0x500n).i64(0x530n).i64(T))
    assert.ok(c.type === 'streamCommit' && c.xid === 900 && String(c.endLsn) === '0/530')
  })

  test('two-phase messages', () => {
    const d = decoder(3)
    const bp = decode(d, new B().ch('b').i64(0x10n).i64(0x20n).i64(T).i32(5).str('g1'))
    assert.ok(bp.type === 'beginPrepare' && bp.gid === 'g1' && bp.xid === 5)
    const p = decode(d, new B().ch('P').u8(0).i64(0x10n).i64(0x20n).i64(T).i32(5).str('g1'))
    assert.ok(p.type === 'prepare' && String(p.endLsn) === '0/20')
    const k = decode(d, new B().ch('K').u8(0).i64(0x30n).i64(0x40n).i64(T).i32(5).str('g1'))
    assert.ok(k.type === 'commitPrepared' && String(k.commitLsn) === '0/30')
    const r = decode(d, new B().ch('r').u8(0).i64(0x20n).i64(0x50n).i64(T).i64(T * 2n).i32(5).str('g1'))
    assert.ok(r.type === 'rollbackPrepared' && r.rollbackTime.getTime() === 946684802000)
  })

  test('malformed messages are refused, naming what is wrong', () => {
    const cases: [string, B, RegExp][] = [
      ['unknown type', new B().ch('Z'), /unknown pgoutput message type 0x5a/],
      ['truncated begin', new B().ch('B').i64(1n), /malformed pgoutput/],
      ['trailing bytes', new B().ch('O').i64(1n).str('x').u8(0), /malformed pgoutput origin.*left over/],
      ['a change before its relation', new B().ch('I').i32(4242).ch('N').i16(0), /relation 4242 before describing it/],
      ['bad tuple kind', new B().ch('I').i32(16384).ch('N').i16(1).ch('x'), /column kind 0x78/],
      ['too many columns', new B().ch('I').i32(16384).ch('N').i16(9), /row of 9 columns/],
      ['value past the end', new B().ch('I').i32(16384).ch('N').i16(1).ch('t').i32(100), /malformed pgoutput/],
      ['stream stop outside a stream', new B().ch('E'), /Stream Stop outside/],
    ]
    for (const [name, b, re] of cases) {
      const d = decoder()
      decode(d, relation())
      assert.throws(() => decode(d, b), (err: Error) => err instanceof ProtocolError && re.test(err.message), name)
    }
  })

  test('a column whose value cannot be decoded is named', () => {
    const d = decoder()
    decode(d, relation())
    assert.throws(() => decode(d, new B().ch('I').i32(16384).ch('N').i16(1).text('not a number')), /column "id" \(int4\) of public.items/)
  })
})

describe('streaming replication messages', () => {
  test('Standby Status Update: exact bytes', () => {
    const w = new Writer()
    const now = PG_EPOCH_MICROS + 0x0102030405n
    writeStandbyStatusUpdate(w, 0x16b374d848n, 0x10n, 0x20n, now, true)
    const bytes = [...w.take()]
    // CopyData, length 4 + 1 + 8*4 + 1 = 38, 'r', three positions, the clock, the reply flag.
    assert.deepEqual(bytes, [
      0x64, 0, 0, 0, 38, 0x72,
      0, 0, 0, 0x16, 0xb3, 0x74, 0xd8, 0x48,
      0, 0, 0, 0, 0, 0, 0, 0x10,
      0, 0, 0, 0, 0, 0, 0, 0x20,
      0, 0, 0, 1, 2, 3, 4, 5,
      1,
    ])
  })

  test('XLogData and keepalive headers; malformed ones refused', () => {
    const x = new B().ch('w').i64(0x100n).i64(0x200n).i64(T).u8(9, 9).bytes()
    const h = decodeXLogData(x, 0, x.length)
    assert.deepEqual([h.walStart, h.walEnd, h.serverTime, h.dataStart], [0x100n, 0x200n, T, 25])
    const k = new B().ch('k').i64(0x300n).i64(T).u8(1).bytes()
    assert.deepEqual(decodePrimaryKeepalive(k, 0, k.length), { walEnd: 0x300n, serverTime: T, replyRequested: true })
    assert.throws(() => decodeXLogData(x, 0, 10), /malformed XLogData/)
    assert.throws(() => decodePrimaryKeepalive(k, 0, k.length - 1), /malformed primary keepalive/)
  })

  test('Lsn parses, formats, compares and converts as PostgreSQL does', () => {
    const a = Lsn.from('16/B374D848')
    assert.equal(a.value, 0x16b374d848n)
    assert.equal(String(a), '16/B374D848')
    assert.equal(String(Lsn.from('0000000A/00000001')), 'A/1')
    assert.ok(a > Lsn.from('16/B374D847') && a < Lsn.from('17/0'))
    assert.ok(a.equals('16/b374d848') && a.equals(0x16b374d848n))
    assert.deepEqual([Lsn.from('2/0'), Lsn.from('1/F'), Lsn.from('1/10')].sort(Lsn.compare).map(String), ['1/F', '1/10', '2/0'])
    assert.equal(String(Lsn.from((1n << 64n) - 1n)), 'FFFFFFFF/FFFFFFFF')
    for (const bad of ['', '/', '1/', 'G/1', '123456789/0', '1/2/3', -1n, 1n << 64n]) assert.throws(() => Lsn.from(bad as string), /LSN/, String(bad))
  })
})
