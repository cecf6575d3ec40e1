import { ArgumentError } from '../errors.js'
import { builtinOids } from '../types/type-info.js'

/** A parameter value with an explicit type, made by typed(). */
export class TypedValue {
  constructor(
    readonly value: unknown,
    readonly oid: number,
    readonly typeName: string,
  ) {}
}

/**
 * Gives a parameter an explicit type, for when the server cannot infer the one
 * you mean (`SELECT $1` is text unless told otherwise) or a JS value could stand
 * for several: `db.query('SELECT $1 AS n', [typed(42, 'int4')])`. The type is a
 * built-in type name ('int8', 'jsonb', 'timestamptz', 'text[]', 'double precision')
 * or any type's OID. The statement is prepared with that parameter type.
 */
export function typed(value: unknown, type: string | number): TypedValue {
  if (typeof type === 'number') {
    if (!Number.isInteger(type) || type <= 0 || type > 0xffffffff) throw new ArgumentError(`typed(): ${type} is not a type OID`)
    return new TypedValue(value, type, `type ${type}`)
  }
  if (typeof type !== 'string') throw new ArgumentError('typed() needs a type name or OID')
  const oid = builtinOids().get(type.trim().toLowerCase())
  if (oid === undefined) {
    throw new ArgumentError(`typed(): "${type}" is not a built-in type name; give the OID of other types (SELECT '${type}'::regtype::oid)`)
  }
  return new TypedValue(value, oid, type)
}

/** The parameter types declared with typed() (0 where none), or null when no value is typed. */
export function declaredTypes(values: readonly unknown[]): number[] | null {
  let types: number[] | null = null
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (v instanceof TypedValue) {
      types ??= new Array<number>(values.length).fill(0)
      types[i] = v.oid
    }
  }
  return types
}
