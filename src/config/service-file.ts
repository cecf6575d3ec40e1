// libpq's connection service file: `[name]` sections of `keyword=value` lines,
// read when a connection names a service (`service=name`, or PGSERVICE). Which
// files, in which order, and how a line is read follow libpq 18 (fe-connect.c,
// parseServiceInfo and parseServiceFile; checked against its psql):
//   1. the user file: the servicefile setting (a keyword of libpq after 18),
//      else PGSERVICEFILE, else ~/.pg_service.conf
//      (%APPDATA%\postgresql\.pg_service.conf on Windows). A file named by a
//      setting or PGSERVICEFILE must exist; ~/.pg_service.conf may be missing;
//   2. the system file: PGSYSCONFDIR/pg_service.conf, if it exists. libpq also
//      has a directory compiled in (Debian's: /etc/postgresql-common); pipegres
//      has none, so without PGSYSCONFDIR there is no system file.
// The first file that has the section is the only one read: sections are not
// merged across files. Within it the first line for a keyword wins, leading and
// trailing whitespace of a line is ignored but nothing around the '=' is, lines
// starting with '#' are comments, and only the lines of the wanted section are
// checked.

import path from 'node:path'
import { ConfigError } from '../errors.js'
import { readEnv } from './env.js'
import { KEYWORDS, type Keyword, UNSUPPORTED_KEYWORDS, closest, isKeyword } from './keywords.js'
import { system } from './system.js'

/** One setting of a service section. */
export interface ServiceSetting {
  value: string
  /** 1-based line number in the file, for errors. */
  line: number
}

/** The section of the service that was found, and where. */
export interface Service {
  name: string
  file: string
  settings: ReadonlyMap<Keyword, ServiceSetting>
}

/** Where to look for a service, and how to read a file (replaceable in tests). */
export interface ServiceLookup {
  /** The servicefile setting from the options or the connection string, if given. */
  servicefile: string | undefined
  env: Record<string, string | undefined>
  /** Home directory override (ResolveOptions.homedir). */
  homedir: string | undefined
  /** Reads a file as UTF-8; throws an error with code ENOENT when it does not exist. */
  readFile?: (file: string) => string
}

/**
 * Finds service `name` in the user file, then the system file. Throws a
 * ConfigError for `setting` (the service setting or PGSERVICE) when no file
 * has it, naming every file searched, and for a malformed line of its section,
 * naming the file and the line (never a value: a line may hold a password).
 */
export function findService(name: string, setting: string, lookup: ServiceLookup): Service {
  const read = lookup.readFile ?? ((file: string) => system().readTextFile(file))
  const searched: string[] = []
  for (const { file, namedBy } of serviceFiles(lookup)) {
    let text: string
    try {
      text = read(file)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        if (namedBy !== undefined) throw new ConfigError(namedBy, `service file "${file}" not found (named by ${namedBy})`, { cause: err })
        searched.push(`"${file}" (does not exist)`)
        continue
      }
      throw new ConfigError(setting, `could not read service file "${file}": ${(err as Error).message}`, { cause: err })
    }
    const settings = parseServiceSection(text, name, file, setting)
    if (settings !== undefined) return { name, file, settings }
    searched.push(`"${file}"`)
  }
  const where = searched.length === 0 ? 'no service file to search (set PGSERVICEFILE or HOME)' : `searched ${searched.join(', ')}`
  const sysconf = readEnv(lookup.env, 'PGSYSCONFDIR') ? '' : '; pipegres reads a system-wide pg_service.conf only from PGSYSCONFDIR'
  throw new ConfigError(setting, `definition of service "${name}" not found: ${where}${sysconf}`)
}

/** A file to search, and the setting that named it, if one did (such a file must exist). */
export interface ServiceFile {
  file: string
  namedBy: 'servicefile' | 'PGSERVICEFILE' | undefined
}

/** The files to search, in order: the user file (if there is a home directory), then the system file (if PGSYSCONFDIR is set). */
export function serviceFiles(lookup: ServiceLookup): ServiceFile[] {
  const files: ServiceFile[] = []
  const fromEnv = nonEmpty(readEnv(lookup.env, 'PGSERVICEFILE'))
  if (lookup.servicefile !== undefined) files.push({ file: lookup.servicefile, namedBy: 'servicefile' })
  else if (fromEnv !== undefined) files.push({ file: fromEnv, namedBy: 'PGSERVICEFILE' })
  else {
    const user = defaultUserFile(lookup)
    if (user !== undefined) files.push({ file: user, namedBy: undefined })
  }
  const sysconf = nonEmpty(readEnv(lookup.env, 'PGSYSCONFDIR'))
  if (sysconf !== undefined) files.push({ file: path.join(sysconf, 'pg_service.conf'), namedBy: undefined })
  return files
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

function defaultUserFile(lookup: ServiceLookup): string | undefined {
  if (process.platform === 'win32') {
    const appdata = nonEmpty(readEnv(lookup.env, 'APPDATA'))
    return appdata === undefined ? undefined : path.join(appdata, 'postgresql', '.pg_service.conf')
  }
  const home = homeDirectory(lookup.homedir, lookup.env)
  return home === undefined ? undefined : path.join(home, '.pg_service.conf')
}

/** The home directory: the override, else HOME, else the OS's; undefined when there is none. */
export function homeDirectory(homedir: string | undefined, env: Record<string, string | undefined>): string | undefined {
  let home = homedir
  if (home === undefined) home = readEnv(env, 'HOME')
  if (home === undefined || home === '') {
    try {
      home = system().homeDir()
    } catch {
      // Deno without --allow-sys, or no passwd entry: no home directory.
      home = ''
    }
  }
  return home === '' ? undefined : home
}

/**
 * The settings of section `[name]` in service-file text, or undefined when the
 * text has no such section. Only the first section of that name counts.
 */
export function parseServiceSection(text: string, name: string, file: string, setting: string): Map<Keyword, ServiceSetting> | undefined {
  const settings = new Map<Keyword, ServiceSetting>()
  let inSection = false
  let found = false
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim()
    if (line === '' || line.startsWith('#')) continue
    if (line.startsWith('[')) {
      if (inSection) break
      // libpq compares the name right after '[' and wants ']' next; the rest of the line is ignored.
      inSection = line.startsWith(`[${name}]`)
      found ||= inSection
      continue
    }
    if (!inSection) continue
    const lineNo = i + 1
    const at = `service file "${file}", line ${lineNo}`
    // libpq built with LDAP takes a line starting with "ldap" as a URL to look the settings up at.
    if (line.startsWith('ldap')) throw new ConfigError(setting, `${at}: pipegres does not support LDAP lookups in service files`)
    const eq = line.indexOf('=')
    if (eq < 0) {
      throw new ConfigError(setting, `syntax error in ${at}: expected keyword=value`)
    }
    const key = line.slice(0, eq)
    if (key === 'service' || key === 'servicefile') {
      throw new ConfigError(setting, `${at}: nested "${key}" specifications are not supported in a service file`)
    }
    if (!isKeyword(key)) throw unknownKey(key, at, setting)
    // As in libpq, the first line for a keyword wins.
    if (!settings.has(key)) settings.set(key, { value: line.slice(eq + 1), line: lineNo })
  }
  return found ? settings : undefined
}

function unknownKey(key: string, at: string, setting: string): ConfigError {
  const trimmed = key.trim()
  if (trimmed !== key && isKeyword(trimmed)) {
    return new ConfigError(setting, `syntax error in ${at}: no spaces are allowed around "=" (libpq reads "${key}" as the keyword)`)
  }
  const hint = UNSUPPORTED_KEYWORDS.get(trimmed)
  if (hint !== undefined) return new ConfigError(trimmed, `${at}: pipegres does not support the connection setting "${trimmed}": ${hint}`)
  const suggestion = closest(trimmed, KEYWORDS)
  return new ConfigError(
    setting,
    `syntax error in ${at}: unknown connection setting "${key}"${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`,
  )
}
