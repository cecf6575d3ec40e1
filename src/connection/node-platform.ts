import { cloudflarePlatform } from './cloudflare-platform.js'
import { onWorkerd } from './cloudflare-socket.js'
import { nodeTls, openSocket, reachServer } from './node-socket.js'
import { describeHost } from './transport.js'
import type { SocketPlatform } from './platform.js'

// The platform of Node, Bun and Deno: sockets of node:net and node:tls, and the
// password file. The Node entry installs it, unless it finds itself in
// Cloudflare's workerd (a bundler that ignored the package's `workerd` export
// condition): there node:tls cannot verify as sslmode asks, and the runtime's
// own sockets are used instead.

export const nodePlatform: SocketPlatform = {
  name: 'Node.js',
  open: (config, h, attempt, register) => openSocket(config, h, attempt, register),
  wrapTls: async (config, stream, h, mode) => (await nodeTls(stream, describeHost(h))).wrapTls(config, stream, h, mode),
  reach: reachServer,
  // The file reader (and node:fs/promises) loads when a server first asks for a password that was not given.
  passwordFromPassfile: async (path, host, port, database, user) => (await import('../config/pgpass.js')).passwordFromPassfile(path, host, port, database, user),
}

/** The platform for the runtime this runs on. */
export function runtimePlatform(): SocketPlatform {
  return onWorkerd() ? cloudflarePlatform : nodePlatform
}
