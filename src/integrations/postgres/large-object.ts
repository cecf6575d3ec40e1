import { Readable, Writable } from 'node:stream'
import type { Result } from './result.js'

// sql.largeObject(oid?, mode?): a large object opened on the server's lo_*
// functions, inside a transaction of its own (a large object descriptor lives
// only as long as its transaction). The promise resolves once the object is
// open; the transaction holds its connection until close(), which closes the
// descriptor and commits. Each method is one statement on that connection and
// resolves with its result, as postgres.js's do.

/** lo_open's modes (libpq's INV_WRITE and INV_READ). */
const INV_WRITE = 0x20000
const INV_READ = 0x40000

export interface LargeObject {
  /** The object's OID (the one given, or the one lo_creat made). */
  readonly oid: number
  /** A readable of the object's bytes from `start` (default: the current position) up to `end` (default: its end). */
  readable(options?: { highWaterMark?: number; start?: number; end?: number }): Promise<Readable>
  /** A writable that writes at `start` (default: the current position). */
  writable(options?: { highWaterMark?: number; start?: number }): Promise<Writable>
  /** Closes the descriptor and commits the transaction; the connection goes back to the pool. */
  close(): Promise<void>
  /** `[{ lo_tell64 }]`: the current position (an int8, so a string). */
  tell(): Promise<Result<{ lo_tell64: string }>>
  /** `[{ data }]`: up to `size` bytes from the current position, as a Buffer. */
  read(size: number): Promise<Result<{ data: Buffer }>>
  /** `[{ lowrite }]`: writes the bytes at the current position; lowrite is how many. */
  write(data: Uint8Array): Promise<Result<{ lowrite: number }>>
  /** Cuts (or zero-extends) the object to `size` bytes. */
  truncate(size: number): Promise<Result<{ lo_truncate64: number }>>
  /** `[{ lo_lseek64 }]`: moves to `offset` from the start (whence 0), the current position (1) or the end (2). */
  seek(offset: number, whence?: number): Promise<Result<{ lo_lseek64: string }>>
  /** `[{ position, size }]`: the current position and the object's size, the position unchanged. */
  size(): Promise<Result<{ position: string; size: string }>>
}

function checkOffset(x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) throw new TypeError(`largeObject: ${what} must be a non-negative integer, not ${String(x)}`)
  return x
}

/** A transaction's tagged template, as far as a large object uses it. */
type Tag = (strings: TemplateStringsArray, ...args: unknown[]) => PromiseLike<unknown>

/** postgres.js's sql.largeObject(), its transactions begun by `begin` (the root sql's begin()). */
export function largeObject(begin: (fn: (tx: Tag) => Promise<void>) => Promise<unknown>, oid?: number, mode: number = INV_WRITE | INV_READ): Promise<LargeObject> {
  if (oid !== undefined && oid !== null && oid !== 0 && (typeof oid !== 'number' || !Number.isInteger(oid) || oid < 0 || oid > 0xffffffff)) {
    return Promise.reject(new TypeError(`sql.largeObject() needs the OID of a large object (an integer from 1 to 4294967295), not ${String(oid)}`))
  }
  if (typeof mode !== 'number' || !Number.isInteger(mode) || (mode & ~(INV_WRITE | INV_READ)) !== 0 || mode === 0) {
    return Promise.reject(new TypeError(`sql.largeObject() mode must be 0x20000 (write), 0x40000 (read) or both, not ${String(mode)}`))
  }
  return new Promise<LargeObject>((resolve, reject) => {
    let opened = false
    // Settled by close(): the transaction's function returns (commit) or throws (rollback) with it.
    let finish!: (err?: unknown) => void
    const closing = new Promise<void>((ok, fail) => {
      finish = (err) => (err === undefined ? ok() : fail(err))
    })
    const transaction = begin(async (tx) => {
      const id = oid ? oid : ((await tx`select lo_creat(-1) as oid`) as Result<{ oid: number }>)[0]!.oid
      const fd = ((await tx`select lo_open(${id}, ${mode}) as fd`) as Result<{ fd: number }>)[0]!.fd
      opened = true
      resolve(open(tx, id, fd, finish, () => transaction))
      await closing
    })
    transaction.then(
      () => undefined,
      (err: unknown) => {
        if (!opened) reject(err)
      },
    )
  })
}

function open(tx: Tag, oid: number, fd: number, finish: (err?: unknown) => void, transaction: () => Promise<unknown>): LargeObject {
  let closed: Promise<void> | undefined
  const lo: LargeObject = {
    oid,
    tell: () => tx`select lo_tell64(${fd})` as unknown as Promise<Result<{ lo_tell64: string }>>,
    read: (size) => tx`select loread(${fd}, ${checkOffset(size, 'the size to read')}) as data` as unknown as Promise<Result<{ data: Buffer }>>,
    write: (data) => {
      if (!(data instanceof Uint8Array)) return Promise.reject(new TypeError('largeObject write() needs a Buffer or Uint8Array'))
      return tx`select lowrite(${fd}, ${data})` as unknown as Promise<Result<{ lowrite: number }>>
    },
    truncate: (size) => tx`select lo_truncate64(${fd}, ${checkOffset(size, 'the size to truncate to')})` as unknown as Promise<Result<{ lo_truncate64: number }>>,
    seek: (offset, whence = 0) => {
      if (whence !== 0 && whence !== 1 && whence !== 2) return Promise.reject(new TypeError(`largeObject seek() whence must be 0 (start), 1 (current) or 2 (end), not ${String(whence)}`))
      if (typeof offset !== 'number' || !Number.isSafeInteger(offset)) return Promise.reject(new TypeError(`largeObject seek() needs an integer offset, not ${String(offset)}`))
      return tx`select lo_lseek64(${fd}, ${offset}, ${whence})` as unknown as Promise<Result<{ lo_lseek64: string }>>
    },
    // Three statements on the transaction's connection, so that the position is read, the end found and the position restored in that order.
    size: async () => {
      const [{ position }] = (await tx`select lo_tell64(${fd}) as position`) as unknown as [{ position: string }]
      const [{ size }] = (await tx`select lo_lseek64(${fd}, 0, 2) as size`) as unknown as [{ size: string }]
      return tx`select lo_lseek64(${fd}, ${position}, 0) as position, ${size}::int8 as size` as unknown as Promise<Result<{ position: string; size: string }>>
    },
    close: () => {
      closed ??= (async () => {
        try {
          await tx`select lo_close(${fd})`
        } catch (err) {
          // The transaction is rolled back with the error; close() reports the error.
          finish(err)
          await transaction().catch(() => undefined)
          throw err
        }
        finish()
        await transaction()
      })()
      return closed
    },
    readable: async ({ highWaterMark = 16384, start, end = Infinity } = {}) => {
      if (start !== undefined) await lo.seek(checkOffset(start, 'start'), 0)
      let left = end === Infinity ? Infinity : checkOffset(end, 'end') - (start ?? Number((await lo.tell())[0]!.lo_tell64))
      return new Readable({
        highWaterMark,
        read(want) {
          const n = Math.min(want, left)
          if (n <= 0) {
            this.push(null)
            return
          }
          lo.read(n).then(
            ([row]) => {
              const data = row!.data
              left -= data.length
              if (data.length > 0) this.push(data)
              if (data.length < n || left <= 0) this.push(null)
            },
            (err: unknown) => this.destroy(err as Error),
          )
        },
      })
    },
    writable: async ({ highWaterMark = 16384, start } = {}) => {
      if (start !== undefined) await lo.seek(checkOffset(start, 'start'), 0)
      return new Writable({
        highWaterMark,
        write(chunk: Buffer, _encoding, done) {
          lo.write(chunk).then(
            () => done(),
            (err: unknown) => done(err as Error),
          )
        },
      })
    },
  }
  return lo
}
