// COPY ... FROM STDIN on PGlite. PGlite runs each execProtocolRaw() call to
// its end: a COPY FROM STDIN whose data is not in the same call leaves its
// backend waiting for input that cannot come, and PGlite exits (0.4 throws an
// ExitStatus that ends the host process). So the stream holds the COPY back:
// a probe (the COPY, then CopyFail at once) gets the server's real
// CopyInResponse for the client, the client's data is gathered until its
// CopyDone or CopyFail, and then the COPY and its data go in one call.

const COPY_IN_RESPONSE = 0x47
const COPY_DONE = 0x63
const COPY_FAIL = 0x66
export const QUERY = 0x51

const COPY_DATA = 0x64

export function isCopyData(type: number): boolean {
  return type === COPY_DATA || type === COPY_DONE || type === COPY_FAIL
}

export function endsCopyIn(type: number): boolean {
  return type === COPY_DONE || type === COPY_FAIL
}

const PARSE = 0x50

/** A Query message whose statement starts as COPY ... FROM STDIN (comments and whitespace before it allowed). */
export function isCopyFromStdin(message: Uint8Array): boolean {
  if (message[0] !== QUERY) return false
  return startsCopyFromStdin(new TextDecoder().decode(message.subarray(5, message.length - 1)))
}

/**
 * A Parse message of COPY ... FROM STDIN. The extended protocol has no way to
 * send the data in the same call (the client learns of the COPY only from the
 * server), and PGlite would exit waiting for it, so the stream answers it itself.
 */
export function isParseOfCopyFromStdin(message: Uint8Array): boolean {
  if (message[0] !== PARSE) return false
  const nameEnd = message.indexOf(0, 5)
  const textEnd = message.indexOf(0, nameEnd + 1)
  return nameEnd >= 0 && textEnd > nameEnd && startsCopyFromStdin(new TextDecoder().decode(message.subarray(nameEnd + 1, textEnd)))
}

function startsCopyFromStdin(sql: string): boolean {
  const start = sql.replace(/^(\s+|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*/, '')
  return /^copy\b[^;]*?\bfrom\s+stdin\b/i.test(start)
}

/** ErrorResponse (feature_not_supported) and ReadyForQuery, as the server would answer a statement it refuses. */
export function refusal(message: string, status: number): Uint8Array {
  const enc = new TextEncoder()
  const fields = [['S', 'ERROR'], ['V', 'ERROR'], ['C', '0A000'], ['M', message]].map(([code, text]) => [code!.charCodeAt(0), ...enc.encode(text), 0])
  const body = [...fields.flat(), 0]
  const out = new Uint8Array(1 + 4 + body.length + 6)
  const view = new DataView(out.buffer)
  out[0] = 0x45 // ErrorResponse
  view.setInt32(1, 4 + body.length)
  out.set(body, 5)
  const z = 5 + body.length
  out[z] = 0x5a // ReadyForQuery
  view.setInt32(z + 1, 5)
  out[z + 5] = status
  return out
}

/** A message whose body is one NUL-terminated string. */
function stringMessage(type: number, body: string): Uint8Array {
  const text = new TextEncoder().encode(body)
  const out = new Uint8Array(6 + text.length)
  out[0] = type
  new DataView(out.buffer).setInt32(1, 5 + text.length)
  out.set(text, 5)
  return out
}

/** A simple Query message. */
export function queryMessage(sql: string): Uint8Array {
  return stringMessage(QUERY, sql)
}

function copyFail(reason: string): Uint8Array {
  return stringMessage(COPY_FAIL, reason)
}

const SAVEPOINT = 'pipegres_pglite_copy_probe'

/**
 * The probe for `query`: the COPY ended by CopyFail in the same call. Inside a
 * transaction a savepoint keeps the failed COPY from aborting it.
 */
export function probeMessages(query: Uint8Array, inTransaction: boolean): Uint8Array[] {
  const probe = [query, copyFail('pipegres: probing the COPY for PGlite')]
  if (!inTransaction) return probe
  return [queryMessage(`SAVEPOINT ${SAVEPOINT}`), ...probe, queryMessage(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}; RELEASE SAVEPOINT ${SAVEPOINT}`)]
}

/**
 * A COPY and all its data, for one call. A CopyFail goes last: one Query may
 * hold a second COPY FROM STDIN, which would wait for data that no later call
 * can bring (the client learns of it only from this call's answer); the
 * CopyFail fails it, and the query with it, as the client would once it saw
 * the second CopyInResponse. When there is no second COPY, the server ignores
 * the CopyFail, as it ignores copy messages outside COPY.
 */
export function copyCall(copyAndData: Uint8Array[]): Uint8Array[] {
  return [...copyAndData, copyFail('pipegres: a second COPY FROM STDIN in one query cannot get its data on PGlite')]
}

/** The CopyInResponse message in `reply`, or undefined when the COPY failed before it (then it has no effect to undo). */
export function findCopyInResponse(reply: Uint8Array): Uint8Array | undefined {
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength)
  for (let at = 0; at + 5 <= reply.length; at += 1 + view.getInt32(at + 1)) {
    if (reply[at] === COPY_IN_RESPONSE) return reply.slice(at, at + 1 + view.getInt32(at + 1))
  }
  return undefined
}

/** `reply` without its first CopyInResponse, which the client has had from the probe. */
export function withoutCopyInResponse(reply: Uint8Array): Uint8Array {
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength)
  for (let at = 0; at + 5 <= reply.length; at += 1 + view.getInt32(at + 1)) {
    if (reply[at] !== COPY_IN_RESPONSE) continue
    const end = at + 1 + view.getInt32(at + 1)
    const out = new Uint8Array(reply.length - (end - at))
    out.set(reply.subarray(0, at))
    out.set(reply.subarray(end), at)
    return out
  }
  return reply
}
