export type { ConnectOptions } from './options.js'
export {
  resolveConfig,
  type ResolveOptions,
  DEFAULT_MAX_MESSAGE_SIZE,
  DEFAULT_STATEMENT_CACHE_SIZE,
  DEFAULT_KEEPALIVE_IDLE_MS,
} from './resolve.js'
export { parseConnectionString } from './connection-string.js'
export { parseUrl, isConnectionUrl, redactUrl } from './parse-url.js'
export { parseKeyValue } from './parse-keyvalue.js'
export type * from './types.js'
export type { ByteStream, StartTlsOptions, StreamTarget, StreamFactory } from './byte-stream.js'
