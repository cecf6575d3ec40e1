// pipegres/pg: pg 8's API (Client, Pool, types, errors, escaping) over
// pipegres. `import pg from 'pipegres/pg'` where code imports pg, or pass
// this module where a library takes pg as a parameter.

import { Client } from './client.js'
import { Pool, PoolClient } from './pool.js'
import { Query } from './query.js'
import { DatabaseError, Result } from './result.js'
import { TypeOverrides, types } from './types.js'
import { defaults, escapeIdentifier, escapeLiteral, prepareValue } from './values.js'

export { Client, Pool, PoolClient, Query, DatabaseError, Result, TypeOverrides, types, defaults, escapeIdentifier, escapeLiteral }
export type { PgClientConfig as ClientConfig } from './config.js'
export type { PgPoolConfig as PoolConfig } from './pool.js'
export type { QueryConfig } from './query.js'
export type { FieldDef } from './result.js'
export { PostgresInterval } from './parsers.js'

/** pg.utils: the parts applications reach for. */
export const utils = { prepareValue, escapeIdentifier, escapeLiteral }

const pg = {
  Client,
  Pool,
  Query,
  DatabaseError,
  Result,
  TypeOverrides,
  types,
  defaults,
  escapeIdentifier,
  escapeLiteral,
  utils,
}
// pg.native runs over libpq; pipegres has no libpq binding, so it is null, as pg gives when pg-native is not installed
// (not enumerable, as in pg, so that copying the module does not touch it).
Object.defineProperty(pg, 'native', { value: null, enumerable: false })

export default pg
