import postgres from 'postgres'
import { runPostgresJs } from '../lib/postgres-js-client.js'

// postgres.js itself (see bench/lib/postgres-js-client.ts for its workloads).

await runPostgresJs(postgres)
