import { createPool } from '../../src/index.js'
import { PrismaPipegres } from '../../src/integrations/prisma/index.js'
import { APP_POOL_SIZE, runApp } from '../lib/app.js'
import { appPrismaClient } from '../lib/app-prisma.js'
import { childMain } from '../lib/measure.js'

// The app workload through Prisma Client (findUnique) on a pipegres Pool of 4.

await childMain(async (task) => {
  const PrismaClient = await appPrismaClient()
  const pool = createPool({ ...task.target, sslmode: 'disable', max: APP_POOL_SIZE })
  const prisma = new PrismaClient({ adapter: new PrismaPipegres(pool) })
  try {
    return await runApp(task, async (id) => (await prisma.user.findUnique({ where: { id }, select: { id: true, name: true, email: true } })) ?? undefined)
  } finally {
    await prisma.$disconnect()
    await pool.end()
  }
})
