// pipegres/wire: decodes the PostgreSQL protocol messages of query results
// (RowDescription, DataRow, CommandComplete, ...) in any JavaScript runtime,
// browsers included. It pairs with Client.queryRaw(), which writes a query's
// result messages as the server sent them into an HTTP response or a file.
// It reuses the Node client's browser-safe layers (protocol/'s framing, field
// description, command tags, message codes and UTF-8; the error fields; types/'
// type options, binary reads, calendar arithmetic and Interval), and nothing
// it reaches may need Node: tsconfig.wire-dom.json compiles it against the DOM
// library alone.

export { WireParser } from './parser.js'
export { splitCommandTag as parseCommandTag } from '../protocol/backend.js'
export type { WireField, WireEvent, WireCompletion, WireParserOptions, RowMode, RowOf } from './parser.js'
export { parseStream, parseResponse } from './stream.js'
export type { WireResult, WireSource, ResponseLike, ByteStream, ByteStreamReader } from './stream.js'
export type { WireTypeOptions } from './scalars.js'
export { WireInterval } from './interval.js'
export { WireProtocolError, WireServerError, WireHttpError } from './errors.js'
export type { WireNotice, WireMessageFields } from './errors.js'
export { WIRE_BINARY_OIDS, binaryDecodable } from './formats.js'
export { wireTypeName } from './types.js'
