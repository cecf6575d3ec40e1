// test-tags: slow, stress
// test-needs: pgbouncer-1.24
import { test } from 'node:test'
import { findPgBouncer124, PGBOUNCER_124_SCRIPT } from '../../support/servers/pgbouncer.js'
import { deepPipelineFile, IN_FLIGHT, RUNS } from '../../support/deep-pipeline.js'

// Deep pipelines through PgBouncer 1.24 (built by scripts/build-pgbouncer.sh)
// in transaction mode: 4 clients over 2 server connections, 1,500 queries in
// flight per client, 50 runs in a row, half with unnamed statements (the
// default) and half with prepare: 'always' (PgBouncer's own prepared
// statements, max_prepared_statements, on by default since 1.22).

const required = process.env.PIPEGRES_REQUIRE_PGBOUNCER === '1'
const binary = findPgBouncer124()
const skip = binary === undefined && !required ? `PgBouncer 1.24 is not built (run ${PGBOUNCER_124_SCRIPT})` : false
const file = deepPipelineFile()

test(`PgBouncer 1.24, transaction mode: ${IN_FLIGHT} queries in flight per client, 4 clients over 2 server connections, ${RUNS} runs (unnamed, then prepare: 'always'), every reply and row its own`, { skip }, async () => {
  if (binary === undefined) throw new Error(`PgBouncer 1.24 is not built: run ${PGBOUNCER_124_SCRIPT} (or set PIPEGRES_PGBOUNCER_124)`)
  const half = Math.ceil(RUNS / 2)
  await file.through(binary, {}, half)
  await file.through(binary, { prepare: 'always' }, RUNS - half)
})
