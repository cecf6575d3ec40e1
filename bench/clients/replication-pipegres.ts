import { Client } from '../../src/index.js'
import { subscribe } from '../../src/replication.js'
import { childMain } from '../lib/measure.js'
import type { Task } from '../lib/protocol.js'
import { measureReplication, REPL_PUBLICATION } from '../lib/replication.js'

// pipegres subscribe() on a temporary slot (as postgres.js uses), values in
// text (default) or, with variant 'binary', in binary.

await childMain(async (task: Task) => {
  const client = new Client({ ...task.target, sslmode: 'disable' })
  try {
    return await measureReplication(task, async (w, start) => {
      const slot = `bench_pipegres_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      const sub = subscribe(client, { slot, publications: [REPL_PUBLICATION], temporary: true, binary: task.variant === 'binary' })
      await sub.ready()
      void start()
      let left = task.size
      for await (const m of sub) {
        if (m.type === 'insert') {
          w.seen(m.row.id as number)
          if (--left === 0) break
        }
      }
    })
  } finally {
    await client.end()
  }
})
