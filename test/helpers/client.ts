import { connect, type Client, type ClientOptions } from '../../src/index.js'
import { mainDatabase } from './server.js'

/** A connected client to the main test database, with any extra settings. */
export async function openClient(extra: ClientOptions = {}): Promise<Client> {
  const db = await mainDatabase()
  return connect({ ...db.options, ...extra })
}

/** A unique name for a table or other object, so test files can share a database. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
}
