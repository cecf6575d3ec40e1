// What configuration reads from the machine: the operating system's user name
// (the default user), the home directory (where the password and service files
// are by default) and files (connection service files). Node, Bun and Deno
// have them through node:os and node:fs (node-system.ts, installed by the Node
// entry); a Worker has none of them, and its entry installs `noSystem`, so a
// Worker bundle carries neither module and loads with compatibility dates from
// before nodejs_compat had node:os (2025-09-15).

export interface SystemAccess {
  /** The operating system's user name; '' when it cannot be determined. */
  userName(): string
  /** The home directory; '' when there is none. */
  homeDir(): string
  /** Reads a file as UTF-8; throws an error with code ENOENT when it does not exist. */
  readTextFile(file: string): string
}

/** A runtime without users, home directories or files (Cloudflare Workers). */
export const noSystem: SystemAccess = {
  userName: () => '',
  homeDir: () => '',
  readTextFile(file) {
    throw Object.assign(new Error(`there are no files to read in this runtime (${file})`), { code: 'ENOENT' })
  },
}

let installed: SystemAccess | undefined

/** Called by the package entry as it loads. */
export function installSystem(access: SystemAccess): void {
  installed = access
}

type Builtins = { getBuiltinModule?: (id: string) => unknown }

/**
 * The installed access, else the runtime's own modules reached without an
 * import (process.getBuiltinModule: Node 20.16+, Bun, Deno), for code that
 * resolves settings without loading a package entry first.
 */
export function system(): SystemAccess {
  if (installed !== undefined) return installed
  const get = (globalThis as { process?: Builtins }).process?.getBuiltinModule
  const os = get?.('node:os') as { userInfo(): { username: string }; homedir(): string } | undefined
  const fs = get?.('node:fs') as { readFileSync(file: string, encoding: 'utf8'): string } | undefined
  if (os === undefined || fs === undefined) return noSystem
  return { userName: () => os.userInfo().username, homeDir: () => os.homedir(), readTextFile: (file) => fs.readFileSync(file, 'utf8') }
}
