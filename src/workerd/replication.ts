// pipegres/replication for Cloudflare Workers (package.json's `workerd` export
// condition, as for the main entry: src/workerd/index.ts): the replication API over
// cloudflare:sockets, without the Node-only transport, password file or
// machine defaults.

import { installSystem, noSystem } from '../config/system.js'
import { cloudflarePlatform } from '../connection/cloudflare-platform.js'
import { installPlatform } from '../connection/platform.js'

installPlatform(cloudflarePlatform)
installSystem(noSystem)

export * from '../replication-exports.js'
