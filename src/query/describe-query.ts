import type { RequestContext } from '../connection/request.js'
import { ProtocolError } from '../errors.js'
import type { FieldDescription } from '../protocol/backend.js'
import { writeDescribe, writeParse, writeSync } from '../protocol/frontend.js'
import type { Writer } from '../protocol/writer.js'
import { checkText } from './binder.js'
import { DESCRIBING, Exchange, noOids, Step } from './exchange.js'
import { ExtendedRequest } from './extended-request.js'
import type { Field } from './result.js'

/** What describe() tells of a statement without running it. */
export interface Description {
  /** The type OIDs of its parameters, $1 first. */
  parameters: number[]
  /** Its result columns; empty for a statement that returns no rows. */
  fields: Field[]
}

/**
 * describe(): Parse and Describe of the unnamed statement, then Sync; nothing
 * is bound or executed. Types the catalog meets for the first time are looked
 * up before it resolves, so values of them can be written and read at once.
 */
export class DescribeQuery extends ExtendedRequest<Description> {
  override encode(w: Writer, ctx: RequestContext): void {
    checkText(this.text)
    const x = new Exchange(ctx)
    this.x = x
    writeParse(w, '', this.text, this.extra?.declared ?? noOids)
    writeDescribe(w, 'S', '')
    writeSync(w)
    x.step = Step.Parse
    this.flags |= DESCRIBING
  }

  protected override described(fields: FieldDescription[]): void {
    const x = this.x!
    x.fields = fields
    x.step = Step.Complete
    const catalog = this.session.catalog
    const unknown = x.paramTypes.filter((oid) => !catalog.knows(oid))
    for (const f of fields) if (!catalog.knows(f.typeOid)) unknown.push(f.typeOid)
    if (unknown.length > 0) x.typesLookup = this.session.lookupTypes(unknown)
  }

  // Nothing is executed: no rows can come (handle() refuses them before they get here).
  protected rowsBegin(): void {
    throw new ProtocolError('server sent rows for a statement that was only described')
  }

  protected row(): void {
    throw new ProtocolError('server sent rows for a statement that was only described')
  }

  protected override outcome(x: Exchange): Description {
    return { parameters: x.paramTypes, fields: x.fields }
  }
}
