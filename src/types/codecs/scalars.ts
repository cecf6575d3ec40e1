import type { Codec, ResolvedTypeOptions } from '../codec.js'
import { registerBool } from './bool.js'
import { registerBytea } from './bytea.js'
import { registerFloats } from './floats.js'
import { registerIntegers } from './integers.js'
import { registerJson } from './json.js'
import { registerLsn } from './lsn.js'
import { registerMisc } from './misc.js'
import { registerMoney } from './money.js'
import { registerNumeric } from './numeric.js'
import { registerOidTypes } from './oid-types.js'
import { registerText } from './text.js'
import { registerUuid } from './uuid.js'

/** Every scalar codec: numbers, bool, text types, bytea, uuid, json, pg_lsn, OID-like and system types. */
export function registerScalars(table: Map<number, Codec>, options: ResolvedTypeOptions): void {
  registerBool(table, options)
  registerIntegers(table, options)
  registerOidTypes(table, options)
  registerFloats(table, options)
  registerNumeric(table, options)
  registerMoney(table, options)
  registerText(table, options)
  registerBytea(table, options)
  registerUuid(table, options)
  registerJson(table, options)
  registerLsn(table, options)
  registerMisc(table, options)
}
