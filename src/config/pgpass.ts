// The libpq password file: lines of hostname:port:database:username:password,
// '*' matching anything, '\' escaping ':' and '\', '#' starting a comment, the
// first matching line winning.

import { readFile, stat } from 'node:fs/promises'

/**
 * Socket directories that libpq builds commonly use as their default. libpq
 * looks a connection to its default socket directory up as `localhost`;
 * pipegres has no compiled-in directory, so it treats these alike.
 */
const DEFAULT_SOCKET_DIRS = new Set(['/tmp', '/var/run/postgresql', '/run/postgresql'])

/**
 * The password for a connection from the password file at `path`, or
 * undefined when the file does not exist, cannot be read, is not a regular
 * file, is readable by group or others (POSIX; libpq ignores such a file and
 * so do we, reporting it through `warn`), has no matching line, or the
 * matching line has an empty password.
 */
export async function passwordFromPassfile(
  path: string,
  host: string,
  port: number,
  database: string,
  user: string,
  warn?: (message: string) => void,
): Promise<string | undefined> {
  let text: string
  try {
    const info = await stat(path)
    if (!info.isFile()) {
      warn?.(`password file "${path}" is not a plain file`)
      return undefined
    }
    // Windows has no such mode bits; libpq trusts the profile directory there.
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      warn?.(`password file "${path}" has group or world access; permissions should be u=rw (0600) or less`)
      return undefined
    }
    text = await readFile(path, 'utf8')
  } catch {
    return undefined
  }
  return findPassword(text, host, port, database, user)
}

/** The password of the first line of password-file text that matches, or undefined. */
export function findPassword(text: string, host: string, port: number, database: string, user: string): string | undefined {
  const hostNames = [host]
  if ((host.startsWith('/') || host.startsWith('@')) && DEFAULT_SOCKET_DIRS.has(host.replace(/\/+$/, ''))) {
    hostNames.push('localhost')
  }
  const wanted = [hostNames, [String(port)], [database], [user]]
  for (const rawLine of text.split('\n')) {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine
    if (line === '' || line.startsWith('#')) continue
    const fields = splitLine(line)
    if (fields === undefined) continue
    let matches = true
    for (let i = 0; i < 4 && matches; i++) {
      const field = fields[i]
      const candidates = wanted[i]
      if (field === undefined || candidates === undefined) matches = false
      else if (!field.wildcard && !candidates.includes(field.value)) matches = false
    }
    if (!matches) continue
    const password = fields[4]?.value ?? ''
    return password === '' ? undefined : password
  }
  return undefined
}

interface Field {
  value: string
  /** The field was exactly an unescaped '*'. */
  wildcard: boolean
}

/**
 * Five fields with escapes removed, or undefined for a line with fewer than
 * four separators (libpq never matches those). Like libpq, the password ends
 * at the next unescaped ':' if there is one.
 */
function splitLine(line: string): Field[] | undefined {
  const fields: Field[] = []
  let value = ''
  let escaped = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (c === '\\' && i + 1 < line.length) {
      value += line[++i]
      escaped = true
    } else if (c === ':') {
      fields.push({ value, wildcard: value === '*' && !escaped })
      if (fields.length === 5) return fields
      value = ''
      escaped = false
    } else {
      value += c
    }
  }
  if (fields.length < 4) return undefined
  fields.push({ value, wildcard: false })
  return fields
}
