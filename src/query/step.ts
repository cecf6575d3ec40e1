// Where an extended-protocol query is in its exchange. Each step accepts only
// the replies the protocol allows next; anything else is a protocol violation.
// A file of its own because the statement cache reads it too (a failure means
// something else at each step), and exchange.ts reads the cache.
export const enum Step {
  /** Waiting for ParseComplete. */
  Parse,
  /** Waiting for ParameterDescription (named statement being described). */
  ParamDesc,
  /** Waiting for RowDescription or NoData of the statement. */
  StmtDesc,
  /** Waiting for BindComplete. */
  Bind,
  /** Waiting for RowDescription or NoData of the portal (unnamed statements). */
  PortalDesc,
  /** DataRows, then CommandComplete or EmptyQueryResponse (or a COPY). */
  Rows,
  /** Inside a COPY TO STDOUT started by this query. */
  CopyOut,
  /** After CopyDone: CommandComplete comes next. */
  CopyOutDone,
  /** COPY FROM STDIN was refused with CopyFail; the server answers with an error. */
  CopyInRefused,
  /** A cursor closed early: what is left of its batch, then CloseComplete. */
  CursorClosing,
  /** Command complete (or failed): ReadyForQuery comes next. */
  Complete,
  /** Closing statements evicted from the cache: CloseComplete, then ReadyForQuery. */
  CloseComplete,
  CloseReady,
  Done,
}
