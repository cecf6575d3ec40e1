import { EventEmitter } from 'node:events'
import type { TextParser } from './parsers.js'
import type { TypeFormat, TypeOverrides } from './types.js'
import { escapeIdentifier, escapeLiteral } from './values.js'

/**
 * What pg's Client and a pool's checked-out client share (in pg the latter
 * is a Client): type parsers of its own over those it was made with, and the
 * escaping helpers.
 */
export abstract class ClientBase extends EventEmitter {
  protected abstract readonly overrides: TypeOverrides

  setTypeParser(oid: number, format: TypeFormat | TextParser, parser?: TextParser): void {
    this.overrides.setTypeParser(oid, format, parser)
  }

  getTypeParser(oid: number, format?: TypeFormat): TextParser {
    return this.overrides.getTypeParser(oid, format)
  }

  escapeIdentifier(name: string): string {
    return escapeIdentifier(name)
  }

  escapeLiteral(value: string): string {
    return escapeLiteral(value)
  }
}
