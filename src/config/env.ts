import { ENV_VARS, type Keyword } from './keywords.js'

/** A setting taken from a PG* environment variable. */
export interface EnvSetting {
  value: string
  /** The variable's name, e.g. PGPORT: errors name it, since that is what the user must fix. */
  name: string
}

/** The PG* settings of an environment, by keyword. */
export interface EnvSettings {
  get(keyword: Keyword): EnvSetting | undefined
}

const variableOf = new Map<Keyword, string>(ENV_VARS.map(([name, keyword]) => [keyword, name]))

/**
 * Reads one variable. One that cannot be read counts as unset: Deno throws
 * for a variable it was not given permission to read, and a connection whose
 * options say everything must not need that permission.
 */
export function readEnv(env: Record<string, string | undefined>, name: string): string | undefined {
  try {
    const value = env[name]
    return typeof value === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * The PG* variables, each read only when a setting is looked up that nothing
 * else gave (so with full options none is read but PGSERVICE, which libpq
 * always reads). An empty variable counts as unset, as in libpq. Variables for
 * features pipegres lacks (PGREQUIREPEER, PGKRBSRVNAME, ...) are never read:
 * the environment is shared with psql and other tools.
 */
export function settingsFromEnv(env: Record<string, string | undefined>): EnvSettings {
  return {
    get(keyword: Keyword): EnvSetting | undefined {
      const name = variableOf.get(keyword)
      if (name === undefined) return undefined
      const value = readEnv(env, name)
      return value === undefined || value === '' ? undefined : { value, name }
    },
  }
}
