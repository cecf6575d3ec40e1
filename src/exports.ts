// The public API of pipegres, as both main entries export it: src/index.ts
// (Node, Bun, Deno) and src/workerd/index.ts (Cloudflare Workers) differ only in the
// socket transport they install. Nothing else is importable: package.json
// exports only the entries, so everything under them is free to change.
// Replication is pipegres/replication (replication-exports.ts): nothing here
// may import src/walsender or src/replication, so that an application that
// does not stream changes neither loads nor bundles them.

export { Client, connect } from './client.js'
export { Pool, createPool, ReservedClient } from './pool/pool.js'
export type { PoolOptions, PoolEvents, PoolSettings } from './pool/pool.js'
export type { HostInfo, HostRole, ReplicationLag } from './pool/hosts.js'
export type { HostChange } from './pool/cluster.js'
export type { PoolHooks } from './pool/hooks.js'
export type { ClientOptions, QueryOptions, SimpleQueryOptions, ClientEvents, Result, Row, Field, RowMode } from './client.js'
export type { QuerySettingOptions, QueryDefaultOptions, RouteOptions, StreamOptions, CursorOptions, RowQueryOptions, DescribeOptions, RawOptions, RawResult, CopyOptions, CopyFromRowsOptions, CopyToRowsOptions, CopyRowSource } from './queryable/queryable.js'
export type { QueryTiming } from './query/timing.js'
export type { Description } from './query/describe-sink.js'
export type { BatchBuilder, BatchOptions, BatchQueryOptions } from './queryable/batch.js'
export type { QueryRowMode } from './query/result.js'
export type { ColumnValues, Columns, NullBitmaps } from './types/columns.js'
export { plainRow, isLazyRow, type LazyRow } from './types/lazy-row.js'
export { CopyInStream, CopyOutStream, type CopyResult } from './queryable/copy-streams.js'
export { CopyRowError, type CopyRow } from './copy/rows.js'
export type { CopyFormat } from './copy/options.js'
export { RowStream } from './queryable/stream.js'
export { Cursor } from './queryable/cursor.js'
export type { RawDestination } from './query/raw.js'
export type { ConnectOptions } from './config/index.js'
export type { AuthMethodName, ConnectionConfig, HostAddress, ProtocolVersion, RequireAuth } from './config/types.js'
export type { SslMode, ChannelBinding, SslNegotiation, TargetSessionAttrs, PasswordSource } from './config/types.js'
export type { ByteStream, StartTlsOptions, StreamTarget, StreamFactory } from './config/byte-stream.js'
export { fragment, identifier, quoteIdentifier, Fragment, Identifier } from './query/sql-template.js'
export { typed, TypedValue } from './query/typed.js'
export { Range, type RangeBounds } from './types/range.js'
export { Interval } from './types/interval.js'
export { Money } from './types/money.js'
export type { TypeOptions } from './types/codec.js'
export type { CustomType } from './types/custom.js'
export type { Notification, TransactionStatus, FieldDescription } from './protocol/backend.js'
export {
  PipegresError,
  ConnectionError,
  ProtocolError,
  ConfigError,
  AuthError,
  ParameterError,
  ArgumentError,
  AbortError,
  TimeoutError,
  ResultLimitError,
  PgError,
} from './errors.js'
export { CodecError } from './types/codec.js'
export { TransactionError, Transaction } from './queryable/transaction.js'
export { StartedTransaction, type StartTransactionOptions, type TransactionState } from './queryable/started-transaction.js'
export { Lsn } from './types/lsn.js'
export type { TransactionOptions, TransactionRetry } from './queryable/transaction.js'
export type { Queryable } from './queryable/queryable.js'
/** @internal pipegres/postgres's way to learn which connection ran a query (result.state). */
export { sentTo, collectInto, type QuerySink } from './queryable/query-options.js'
/** @internal pipegres/postgres's results, made as the rows are collected. */
export { CollectInto } from './query/collect-sink.js'
/** @internal */
export type { SentTrace, ConnectionState } from './connection/request.js'
export type { CopyFormatOptions } from './copy/options.js'
export type { Listener, NotificationHandler } from './lane/notify.js'
export type { QueryTrace, ConnectTrace, AcquireTrace, TracingOptions } from './trace/tracing.js'
export type { ClientErrorCode, PgErrorFields, PgNotice } from './errors.js'
export { SqlState, type SqlStateCode } from './protocol/sql-state.js'
