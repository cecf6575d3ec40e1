// The package entry for Node, Bun and Deno (and any runtime a bundler did not
// mark as Cloudflare's): the public API (exports.ts) over sockets of node:net
// and node:tls, or over cloudflare:sockets when it runs in workerd after all,
// with the machine's user name, home directory and files for the defaults.

import { nodeSystem } from './config/node-system.js'
import { installSystem } from './config/system.js'
import { runtimePlatform } from './connection/node-platform.js'
import { installPlatform } from './connection/platform.js'

installPlatform(runtimePlatform())
installSystem(nodeSystem)

export * from './exports.js'
