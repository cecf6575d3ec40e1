import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { Writable } from 'node:stream'
import { connect } from '../../src/index.js'
import { decodeRowDescription } from '../../src/protocol/backend.js'
import { Backend } from '../../src/protocol/message-codes.js'
import type { Target } from './protocol.js'
import { typedReadSql } from './workloads.js'

// The codec microbenchmarks decode what a real server sent, not bytes made up
// here: the typed table's rows are captured once per run, in both result
// formats, with queryRaw() (the server's messages as they came off the socket).
//
// File: one line of JSON (the header), then the parts' bytes back to back. Each
// part is RowDescription, every DataRow, CommandComplete: the RowDescription
// carries the names, type OIDs and formats the decoder needs, and the header
// repeats them only so that a person can tell what a fixture holds.

export type CodecFormat = 'binary' | 'text'

export interface CodecFixturePart {
  format: CodecFormat
  /** The part's messages, each with its 5-byte header. */
  bytes: Uint8Array
  /** Bytes of the RowDescription message at the start of `bytes`. */
  descriptionLength: number
}

export interface CodecFixture {
  sql: string
  rows: number
  /** The server's version when the fixture was captured. */
  server: string
  parts: CodecFixturePart[]
}

interface Header {
  sql: string
  rows: number
  server: string
  parts: { format: CodecFormat; length: number; descriptionLength: number; columns: [name: string, typeOid: number, format: number][] }[]
}

/** Checks that `bytes` is RowDescription, `rows` DataRows, CommandComplete; returns the header entry. */
function describe(format: CodecFormat, bytes: Uint8Array, rows: number): Header['parts'][number] {
  const len = (at: number): number => ((bytes[at + 1]! << 24) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 8) | bytes[at + 4]!) + 1
  if (bytes[0] !== Backend.RowDescription) throw new Error(`${format} capture does not start with a RowDescription`)
  const descriptionLength = len(0)
  const columns = decodeRowDescription(bytes, 5, descriptionLength).map((f): [string, number, number] => [f.name, f.typeOid, f.format])
  let at = descriptionLength
  let count = 0
  while (at < bytes.length && bytes[at] === Backend.DataRow) {
    at += len(at)
    count++
  }
  if (bytes[at] !== Backend.CommandComplete || at + len(at) !== bytes.length) throw new Error(`${format} capture does not end with CommandComplete`)
  if (count !== rows) throw new Error(`${format} capture holds ${count} rows, not ${rows}: is the table that big?`)
  return { format, length: bytes.length, descriptionLength, columns }
}

/** Captures the server's reply to `sql` (by default typedReadSql(rows)), `rows` rows, in binary and in text into `file`. */
export async function captureCodecFixture(target: Target, rows: number, file: string, sql = typedReadSql(rows)): Promise<void> {
  const db = await connect({ ...target, sslmode: 'disable' })
  try {
    const parts: Header['parts'] = []
    const blobs: Buffer[] = []
    for (const format of ['binary', 'text'] as const) {
      const chunks: Buffer[] = []
      // queryRaw() hands out views of the socket's chunks: copied, not kept.
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          chunks.push(Buffer.from(chunk))
          done()
        },
      })
      await db.queryRaw(sql, [], sink, { format })
      const bytes = Buffer.concat(chunks)
      parts.push(describe(format, bytes, rows))
      blobs.push(bytes)
    }
    const header: Header = { sql, rows, server: db.serverParameters.server_version ?? '', parts }
    await writeFile(file, Buffer.concat([Buffer.from(JSON.stringify(header) + '\n'), ...blobs]))
  } finally {
    await db.end()
  }
}

/** Reads a file written by captureCodecFixture(). */
export function readCodecFixture(file: string): CodecFixture {
  const data = readFileSync(file)
  const nl = data.indexOf(0x0a)
  if (nl < 0) throw new Error(`${file} is not a codec fixture`)
  const header = JSON.parse(data.subarray(0, nl).toString('utf8')) as Header
  let at = nl + 1
  const parts = header.parts.map((p): CodecFixturePart => {
    const bytes = data.subarray(at, at + p.length)
    at += p.length
    return { format: p.format, bytes, descriptionLength: p.descriptionLength }
  })
  if (at !== data.length) throw new Error(`${file} is truncated or has trailing bytes`)
  return { sql: header.sql, rows: header.rows, server: header.server, parts }
}
