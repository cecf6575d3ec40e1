// The package entry for Cloudflare Workers (package.json's `workerd` export
// condition, which wrangler and Cloudflare's Vite plugin use): the public API
// (exports.ts) over the runtime's cloudflare:sockets. It leaves out what only
// Node uses (the node:net and node:tls transport, its shared read buffer, the
// password file reader, node:os and node:fs), so a Worker bundle does not carry
// them. The Cloudflare transport by name is pipegres/cloudflare (src/workerd/cloudflare.ts).

import { installSystem, noSystem } from '../config/system.js'
import { cloudflarePlatform } from '../connection/cloudflare-platform.js'
import { installPlatform } from '../connection/platform.js'

installPlatform(cloudflarePlatform)
// No user name, home directory or files: settings come from the connection string and options.
installSystem(noSystem)

export * from '../exports.js'
