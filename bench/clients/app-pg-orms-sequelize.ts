import { DataTypes, Sequelize } from 'sequelize'
import { childMain } from '../lib/measure.js'
import { USERS_TABLE } from '../lib/workloads.js'
import { driverFor, POOL_SIZE, runRequests, targetUrl, type User } from './app-pg-orms-shared.js'

// app-pg-orms through Sequelize 6: Model.findByPk on a pool of 4 (Sequelize's own pool of pg Clients).

await childMain(async (task) => {
  const sequelize = new Sequelize(targetUrl(task), { dialect: 'postgres', dialectModule: (await driverFor(task)) as object, logging: false, pool: { max: POOL_SIZE, min: POOL_SIZE } })
  const Users = sequelize.define('User', { id: { type: DataTypes.UUID, primaryKey: true }, name: DataTypes.TEXT, email: DataTypes.TEXT }, { tableName: USERS_TABLE, timestamps: false })
  try {
    return await runRequests(task, async (id) => (await Users.findByPk(id, { attributes: ['id', 'name', 'email'], raw: true })) as User | null)
  } finally {
    await sequelize.close()
  }
})
