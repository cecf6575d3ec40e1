import { createRequire } from 'node:module'
import knexFactory, { type Knex } from 'knex'
import { childMain } from '../lib/measure.js'
import { USERS_TABLE } from '../lib/workloads.js'
import { driverFor, POOL_SIZE, runRequests, targetUrl, type User } from './app-pg-orms-shared.js'

// app-pg-orms through Knex 3: its pg client class with _driver() giving the module under test, a pool of 4.

const require = createRequire(import.meta.url)
const ClientPG = require('knex/lib/dialects/postgres/index.js') as new (config: Knex.Config) => { _driver(): unknown }

await childMain(async (task) => {
  const driver = await driverFor(task)
  class Client extends ClientPG {
    override _driver(): unknown {
      return driver
    }
  }
  const db = knexFactory({ client: Client as never, connection: targetUrl(task), pool: { min: POOL_SIZE, max: POOL_SIZE } })
  try {
    return await runRequests(task, async (id) => (await db<User>(USERS_TABLE).select('id', 'name', 'email').where({ id }).first()) as User | undefined)
  } finally {
    await db.destroy()
  }
})
