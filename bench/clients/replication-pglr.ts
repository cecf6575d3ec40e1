import pg from 'pg'
import { LogicalReplicationService, PgoutputPlugin } from 'pg-logical-replication'
import { childMain } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { measureReplication, REPL_PUBLICATION } from '../lib/replication.js'

// pg-logical-replication's pgoutput plugin over pg, on a slot created for the
// repetition (it streams from an existing slot) and dropped after it.

await childMain(async (task: Task) => {
  const admin = new pg.Client({ ...task.target })
  await admin.connect()
  try {
    return await measureReplication(task, async (w, start) => {
      const slot = `bench_pglr_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      await admin.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [slot])
      const service = new LogicalReplicationService({ ...task.target }, { acknowledge: { auto: true, timeoutSeconds: 10 } })
      const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: [REPL_PUBLICATION] })
      let left = task.size
      let done!: () => void
      const finished = new Promise<void>((r) => (done = r))
      service.on('data', (_lsn: string, log: { tag: string; new?: Record<string, unknown> }) => {
        if (log.tag !== 'insert') return
        w.seen(log.new!.id as number)
        if (--left === 0) done()
      })
      service.on('error', () => {})
      const started = new Promise<void>((r) => service.once('start', () => r()))
      void service.subscribe(plugin, slot).catch(() => undefined)
      await started
      void start()
      await finished
      await service.stop()
      for (let i = 0; i < 100; i++) {
        try {
          await admin.query('SELECT pg_drop_replication_slot($1)', [slot])
          break
        } catch {
          await new Promise((r) => setTimeout(r, 50))
        }
      }
    })
  } finally {
    await admin.end()
  }
})
