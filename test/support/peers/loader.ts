// `node --import=<this file>`: put in NODE_OPTIONS by `npm run test:peers`, so
// that every Node process of a run (the test runner, each test file, what they
// start) loads the swapped packages from the release under test (hooks.ts).
// Without PIPEGRES_PEERS it does nothing.
//
// The hooks see `import`, not `require()` (Node 20's hooks leave the CommonJS
// loader alone), so at exit each process also looks through the CommonJS
// cache for a file of a swapped package loaded from anywhere else, and logs
// it: the script fails such a run rather than count it for that release.

import { appendFileSync } from 'node:fs'
import { createRequire, register } from 'node:module'
import { sep } from 'node:path'
import { PEERS_ENV, type PeerSwap } from './swap.js'

const raw = process.env[PEERS_ENV]
if (raw !== undefined && raw !== '') {
  const swap = JSON.parse(raw) as PeerSwap
  register('./hooks.js', import.meta.url, { data: swap })
  const cache = createRequire(import.meta.url).cache
  process.on('exit', () => {
    const strays: string[] = []
    for (const file of Object.keys(cache)) {
      if (file.startsWith(swap.dir + sep)) continue
      if (swap.packages.some((name) => file.includes(`${sep}node_modules${sep}${name.split('/').join(sep)}${sep}`))) strays.push(file)
    }
    for (const stray of strays) appendFileSync(swap.log, JSON.stringify({ pid: process.pid, stray }) + '\n')
  })
}
