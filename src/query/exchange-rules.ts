import { ProtocolError, ResultLimitError } from '../errors.js'
import { writeCopyFail, writeSync } from '../protocol/frontend.js'
import { Backend } from '../protocol/message-codes.js'
import { Step, type Exchange, type ResultLimits } from './exchange.js'

// Two rules of an extended-protocol exchange that need nothing of the request
// but its exchange: a COPY started through a query, and result limits.

/**
 * The COPY replies of a statement run through query(): false when `type`
 * cannot come at this step (a protocol violation). COPY TO STDOUT is read to
 * its end and discarded. COPY FROM STDIN belongs to copyFrom(): if nothing
 * was written behind this query, CopyFail + Sync ends the copy cleanly (the
 * server ignores the Sync sent with Execute while in copy mode). If other
 * requests were written already, the server has taken their messages as the
 * copy's end and skipped them: the stream can no longer be matched to
 * requests, so the connection is closed rather than risk a misattributed result.
 */
export function refuseCopy(x: Exchange, type: number): boolean {
  switch (type) {
    case Backend.CopyOutResponse:
      if (x.step !== Step.Rows) return false
      x.step = Step.CopyOut
      x.failure ??= new ProtocolError('COPY TO STDOUT cannot run through query(); its data was discarded')
      return true
    case Backend.CopyData:
      return x.step === Step.CopyOut
    case Backend.CopyDone:
      if (x.step !== Step.CopyOut) return false
      x.step = Step.CopyOutDone
      return true
    case Backend.CopyInResponse: {
      if (x.step !== Step.Rows) return false
      const ctx = x.ctx
      if (ctx.inflightBehind > 0) {
        ctx.destroy(new ProtocolError('COPY FROM STDIN was started through query() while other queries were in flight; use copyFrom() for COPY FROM STDIN'))
        return true
      }
      x.failure ??= new ProtocolError('COPY FROM STDIN cannot run through query(); use copyFrom()')
      ctx.writeNow((w) => {
        writeCopyFail(w, 'COPY FROM STDIN is not supported through query()')
        writeSync(w)
      })
      x.step = Step.CopyInRefused
      return true
    }
    default:
      return false
  }
}

/** Counts one more row of `size` bytes; the error to fail with once the result has passed a limit, else null. */
export function passedLimit(x: Exchange, limits: ResultLimits, size: number): ResultLimitError | null {
  const rows = ++x.received
  const bytes = (x.receivedBytes += size)
  if (rows <= limits.maxRows && bytes <= limits.maxBytes) return null
  return rows > limits.maxRows ? new ResultLimitError('maxRows', limits.maxRows, rows) : new ResultLimitError('maxBytes', limits.maxBytes, bytes)
}
