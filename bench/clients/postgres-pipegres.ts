import type postgresJs from 'postgres'
import postgres from '../../src/integrations/postgres/index.js'
import { runPostgresJs } from '../lib/postgres-js-client.js'

// pipegres/postgres, postgres.js's API on pipegres, through the same code as
// postgres.js itself (bench/lib/postgres-js-client.ts).

await runPostgresJs(postgres as unknown as typeof postgresJs)
