import { after } from 'node:test'
import { connect, type Client, type ClientOptions } from '../../src/index.js'
import { holdPGlite, pgliteClient } from './servers/pglite-target.js'
import { mainDatabase } from './servers/test-server.js'
import { onPGlite } from './target.js'

/** A connected client to the main test database, with any extra settings; on PGlite, a connectPGlite() client. */
export async function openClient(extra: ClientOptions = {}): Promise<Client> {
  if (onPGlite) return pgliteClient(extra)
  const db = await mainDatabase()
  return connect({ ...db.options, ...extra })
}

/** A unique name for a table or other object, so test files can share a database. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
}

export interface FileClientOptions {
  /** Statements run once before the tests (simple protocol: several may go together), e.g. creating a table. */
  setup?: string
  /** Statements run after the file's last test, before the client closes, e.g. dropping that table. */
  cleanup?: string
  /** Extra client settings. */
  options?: ClientOptions
}

/**
 * The client a whole test file shares: connected when the file loads (call it
 * with a top-level await), set up at once, cleaned up and closed after the
 * file's last test. The clean-up is registered before the set-up runs, so
 * whatever a half-done set-up created is still dropped.
 */
export async function fileClient({ setup, cleanup, options }: FileClientOptions = {}): Promise<Client> {
  // On PGlite the instance must outlive this client's clean-up.
  const release = onPGlite ? holdPGlite() : undefined
  let db: Client
  try {
    db = await openClient(options)
  } catch (err) {
    await release?.()
    throw err
  }
  after(async () => {
    try {
      if (cleanup !== undefined) await db.simpleQuery(cleanup)
    } finally {
      try {
        await db.end()
      } finally {
        await release?.()
      }
    }
  })
  if (setup !== undefined) await db.simpleQuery(setup)
  return db
}
