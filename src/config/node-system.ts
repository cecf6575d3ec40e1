import { readFileSync } from 'node:fs'
import os from 'node:os'
import type { SystemAccess } from './system.js'

/** The machine as Node, Bun and Deno show it; installed by the Node entry. */
export const nodeSystem: SystemAccess = {
  userName: () => os.userInfo().username,
  homeDir: () => os.homedir(),
  readTextFile: (file) => readFileSync(file, 'utf8'),
}
