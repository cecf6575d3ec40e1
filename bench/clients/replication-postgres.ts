import postgres from 'postgres'
import { childMain } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { measureReplication, REPL_PUBLICATION, REPL_TABLE } from '../lib/replication.js'

// postgres.js subscribe(): its own temporary slot per subscription, pgoutput
// protocol 1, values in text parsed by its default types.

await childMain(async (task: Task) =>
  measureReplication(task, async (w, start) => {
    const sql = postgres({ ...task.target, ssl: false, max: 1, publications: REPL_PUBLICATION, onnotice: () => {} })
    try {
      let left = task.size
      let done!: () => void
      const finished = new Promise<void>((r) => (done = r))
      await sql.subscribe(`insert:${REPL_TABLE}`, (row) => {
        w.seen(row!.id as number)
        if (--left === 0) done()
      })
      void start()
      await finished
    } finally {
      await sql.end()
    }
  }),
)
