import 'reflect-metadata'
import { DataSource, EntitySchema } from 'typeorm'
import { childMain } from '../lib/measure.js'
import { USERS_TABLE } from '../lib/workloads.js'
import { driverFor, POOL_SIZE, runRequests, targetUrl, type User } from './app-pg-orms-shared.js'

// app-pg-orms through TypeORM: Repository.findOneBy on its pg Pool of 4.

const UserEntity = new EntitySchema<User>({
  name: 'User',
  tableName: USERS_TABLE,
  columns: { id: { type: 'uuid', primary: true }, name: { type: 'text', nullable: true }, email: { type: 'text', nullable: true } },
})

await childMain(async (task) => {
  const ds = new DataSource({ type: 'postgres', url: targetUrl(task), driver: await driverFor(task), entities: [UserEntity], poolSize: POOL_SIZE, logging: false })
  await ds.initialize()
  const users = ds.getRepository(UserEntity)
  try {
    return await runRequests(task, (id) => users.findOneBy({ id }))
  } finally {
    await ds.destroy()
  }
})
