import { ProtocolError } from '../errors.js'
import type { Exchange } from './exchange.js'
import type { Field } from './result.js'
import type { RowSink, RowSource } from './row-sink.js'

/** What describe() tells of a statement without running it. */
export interface Description {
  /** The type OIDs of its parameters, $1 first. */
  parameters: number[]
  /** Its result columns; empty for a statement that returns no rows. */
  fields: Field[]
}

/**
 * describe() (with the policy describeOnly): nothing is executed, so no rows
 * can come (the exchange refuses them before they get here); the outcome is
 * the statement's description.
 */
export class DescribeSink implements RowSink<Description> {
  readonly streams = false

  begin(): void {
    throw new ProtocolError('server sent rows for a statement that was only described')
  }

  row(): void {
    throw new ProtocolError('server sent rows for a statement that was only described')
  }

  complete(): void {}

  outcome(_q: RowSource, x: Exchange): Description {
    return { parameters: x.paramTypes, fields: x.fields }
  }
}

export const describeSink = new DescribeSink()
