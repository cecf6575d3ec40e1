// test-tags: slow, stress
// test-needs: pgbouncer
import { test } from 'node:test'
import { stressSize } from '../../support/tier.js'
import { findPgBouncer } from '../../support/servers/pgbouncer.js'
import { deepPipelineFile, IN_FLIGHT, RUNS } from '../../support/deep-pipeline.js'

// Deep pipelines through PgBouncer 1.18 (Debian's package) in transaction mode:
// 4 clients over 2 server connections, 1,500 queries in flight per client, 50
// runs in a row. Without the bound a pooled connection keeps on what it has in
// flight (lane/probe.ts), PgBouncer 1.18 ends a session with 08P01 or loses
// replies within a few dozen such runs. The bound narrows PgBouncer's window
// and cannot close it (its comment says why), so LOSSY_RUNS of the runs may
// meet a session that PgBouncer ended: every query of it must then fail with a
// ConnectionError, never with a wrong reply, and each of its writes is in the
// table with its own values or not at all.

const required = process.env.PIPEGRES_REQUIRE_PGBOUNCER === '1'
const skip = findPgBouncer() === undefined && !required ? 'pgbouncer is not installed (apt-get install pgbouncer)' : false
const file = deepPipelineFile()
const LOSSY_RUNS = Number(process.env.PIPEGRES_DEEP_PIPELINE_LOSSY ?? stressSize(1, 2))

test(`PgBouncer 1.18, transaction mode: ${IN_FLIGHT} queries in flight per client, 4 clients over 2 server connections, ${RUNS} runs, every reply and row its own`, { skip }, async (t) => {
  const report = await file.through(undefined, {}, RUNS, LOSSY_RUNS)
  t.diagnostic(`${report.lossyRuns} of ${RUNS} runs met a session PgBouncer ended (${LOSSY_RUNS} tolerated), failing ${report.lostQueries} queries with a ConnectionError`)
})
