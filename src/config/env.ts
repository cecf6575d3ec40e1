import { ENV_VARS, type Keyword } from './keywords.js'

/** A setting taken from a PG* environment variable. */
export interface EnvSetting {
  value: string
  /** The variable's name, e.g. PGPORT: errors name it, since that is what the user must fix. */
  name: string
}

/**
 * The PG* variables that are set, by keyword. An empty variable counts as
 * unset, as in libpq. Variables for features pipegres lacks (PGSERVICE,
 * PGREQUIREPEER, PGKRBSRVNAME, ...) are ignored rather than rejected: the
 * environment is shared with psql and other tools.
 */
export function settingsFromEnv(env: Record<string, string | undefined>): Map<Keyword, EnvSetting> {
  const out = new Map<Keyword, EnvSetting>()
  for (const [name, keyword] of ENV_VARS) {
    const value = env[name]
    if (value !== undefined && value !== '') out.set(keyword, { value, name })
  }
  return out
}
