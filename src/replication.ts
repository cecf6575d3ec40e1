// pipegres/replication for Node, Bun and Deno (and any runtime a bundler did
// not mark as Cloudflare's): logical subscriptions, raw WAL streaming and
// replication connections (replication-exports.ts), over the transport the
// main entry installs too (src/index.ts), so that this entry works alone:
// `subscribe('postgres://...', options)` needs no `import 'pipegres'` first.

import { nodeSystem } from './config/node-system.js'
import { installSystem } from './config/system.js'
import { runtimePlatform } from './connection/node-platform.js'
import { installPlatform } from './connection/platform.js'

installPlatform(runtimePlatform())
installSystem(nodeSystem)

export * from './replication-exports.js'
