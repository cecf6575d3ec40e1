import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, ConnectionError, ProtocolError } from '../../../src/index.js'
import { commandComplete, int16, message, readyForQuery } from '../../support/fakes/backend-messages.js'
import { fakeServer, type FakeConnection } from '../../support/fakes/fake-server.js'

// COPY against a server that breaks the protocol: every such case closes the
// connection with a ProtocolError naming what came, fails the COPY's stream,
// and leaves nothing hanging.

const copyInResponse = (columns = 1): Uint8Array => message('G', Buffer.from([0]), int16(columns), ...Array.from({ length: columns }, () => int16(0)))
const copyOutResponse = (columns = 1, format = 0): Uint8Array => message('H', Buffer.from([format]), int16(columns), ...Array.from({ length: columns }, () => int16(format)))
const copyData = (s: string): Uint8Array => message('d', Buffer.from(s))
const copyDone = (): Uint8Array => message('c')

/** A server that completes startup, waits for the first Query, then runs `then`. */
async function afterQuery(then: (c: FakeConnection) => Promise<void> | void) {
  return fakeServer(async (c) => {
    await c.acceptStartup()
    for (;;) {
      const m = await c.read()
      if (m.type === 'Q') break
    }
    await then(c)
    await c.waitClosed()
  })
}

async function expectFailure(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof ProtocolError || e instanceof ConnectionError, String(e))
    assert.match((e as Error).message, pattern)
    return true
  })
}

test('CommandComplete in copy-in mode before the data was ended fails the connection', async () => {
  const s = await afterQuery((c) => c.write(copyInResponse(), commandComplete('COPY 0'), readyForQuery()))
  const db = await connect(s.options)
  try {
    const w = db.copyFrom('COPY t FROM STDIN')
    w.write('1\n')
    await expectFailure(w.result, /before the data was ended/)
    assert.ok(w.destroyed)
  } finally {
    await db.end()
    await s.close()
  }
})

test('ReadyForQuery in the middle of copy-out fails the connection and the stream', async () => {
  const s = await afterQuery((c) => c.write(copyOutResponse(), copyData('1\n'), readyForQuery()))
  const db = await connect(s.options)
  try {
    const r = db.copyTo('COPY t TO STDOUT')
    await expectFailure(
      (async () => {
        for await (const _ of r);
      })(),
      /ReadyForQuery where a reply to COPY \.\.\. TO STDOUT could not contain it/,
    )
  } finally {
    await db.end()
    await s.close()
  }
})

test('rows of a binary COPY that do not match its columns fail with a ProtocolError, never a wrong row', async () => {
  // One int4 column described, then a tuple with two fields.
  const s = await fakeServer(async (c) => {
    await c.acceptStartup()
    // The describe: a one-column int4 result with no rows, message by message.
    for (;;) {
      const m = await c.read()
      if (m.type === 'P') c.write(message('1'))
      else if (m.type === 'D') c.write(message('t', int16(0)), message('T', int16(1), Buffer.from('a\0'), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 0xff, 0xff, 0xff, 0xff, 0, 0])))
      else if (m.type === 'B') c.write(message('2'))
      else if (m.type === 'E') c.write(commandComplete('SELECT 0'))
      else if (m.type === 'S') {
        c.write(readyForQuery())
        break
      }
    }
    for (;;) if ((await c.read()).type === 'Q') break
    const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
    const tuple = Buffer.concat([int16(2), Buffer.from([0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2])])
    c.write(copyOutResponse(1, 1), message('d', header, tuple), copyDone(), commandComplete('COPY 1'), readyForQuery())
    await c.waitClosed()
  })
  const db = await connect(s.options)
  try {
    const rows: unknown[] = []
    await assert.rejects(
      (async () => {
        for await (const row of db.copyToRows('SELECT a FROM t')) rows.push(row)
      })(),
      ProtocolError,
    )
    assert.deepEqual(rows, [])
  } finally {
    await db.end()
    await s.close()
  }
})

test('a server that closes the connection during copy-in fails the stream with a ConnectionError', async () => {
  const s = await afterQuery((c) => {
    c.write(copyInResponse())
    c.socket.destroy()
  })
  const db = await connect(s.options)
  try {
    const w = db.copyFrom('COPY t FROM STDIN')
    w.write('1\n')
    await assert.rejects(w.result, ConnectionError)
    assert.ok(w.destroyed)
  } finally {
    await db.end()
    await s.close()
  }
})
