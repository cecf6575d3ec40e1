// Sequelize 6 with pipegres/pg as its dialectModule: models and schema sync,
// reads and writes of its data types, managed and unmanaged transactions,
// raw queries with replacements and bind parameters.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { DataTypes, Op, QueryTypes, Sequelize, Transaction } from 'sequelize'
import pg from '../../../../src/integrations/pg/index.js'
import { mainDatabase } from '../../../support/servers/test-server.js'
import { uniqueName } from '../../../support/client.js'

const { connectionString } = await mainDatabase()
const sequelize = new Sequelize(connectionString!, { dialect: 'postgres', dialectModule: pg, logging: false, pool: { max: 4 } })
const usersTable = uniqueName('pgs_users')
const postsTable = uniqueName('pgs_posts')

const User = sequelize.define(
  'User',
  {
    id: { type: DataTypes.INTEGER, primaryKey: true, autoIncrement: true },
    email: { type: DataTypes.STRING, allowNull: false, unique: true },
    balance: { type: DataTypes.DECIMAL(12, 2), defaultValue: '0' },
    visits: { type: DataTypes.BIGINT, defaultValue: 0 },
    profile: { type: DataTypes.JSONB },
    tags: { type: DataTypes.ARRAY(DataTypes.TEXT) },
    born: { type: DataTypes.DATEONLY },
    seenAt: { type: DataTypes.DATE },
    avatar: { type: DataTypes.BLOB },
    mood: { type: DataTypes.ENUM('sad', 'ok', 'happy') },
  },
  { tableName: usersTable },
)
const Post = sequelize.define('Post', { title: DataTypes.STRING }, { tableName: postsTable })
User.hasMany(Post, { foreignKey: 'userId' })
Post.belongsTo(User, { foreignKey: 'userId' })

after(async () => {
  await Post.drop({})
  await User.drop({})
  await sequelize.query(`DROP TYPE IF EXISTS "enum_${usersTable}_mood"`)
  await sequelize.close()
})

await sequelize.authenticate()
await User.sync({ force: true })
await Post.sync({ force: true })

test('models: create, find, update, destroy, with every column type read back as written', async () => {
  const seen = new Date('2024-02-29T12:34:56.789Z')
  const created = await User.create({
    email: 'ada@example.com',
    balance: '12.50',
    visits: 9007199254740993n.toString(),
    profile: { lang: 'en', n: [1, 2] },
    tags: ['a', 'b,c', 'd"e'],
    born: '1815-12-10',
    seenAt: seen,
    avatar: Buffer.from([1, 2, 255]),
    mood: 'happy',
  })
  const id = created.get('id') as number
  assert.ok(id > 0)
  const found = await User.findByPk(id)
  assert.ok(found)
  assert.equal(found.get('balance'), '12.50')
  assert.equal(found.get('visits'), '9007199254740993')
  assert.deepEqual(found.get('profile'), { lang: 'en', n: [1, 2] })
  assert.deepEqual(found.get('tags'), ['a', 'b,c', 'd"e'])
  assert.equal(found.get('born'), '1815-12-10')
  assert.equal((found.get('seenAt') as Date).toISOString(), seen.toISOString())
  assert.deepEqual(found.get('avatar'), Buffer.from([1, 2, 255]))
  assert.equal(found.get('mood'), 'happy')

  await User.update({ visits: 5 }, { where: { id } })
  const [affected] = await User.update({ mood: 'ok' }, { where: { email: { [Op.like]: 'ada@%' } } })
  assert.equal(affected, 1)
  await Post.bulkCreate([{ title: 'one', userId: id }, { title: 'two', userId: id }])
  const withPosts = await User.findOne({ where: { id }, include: [Post] })
  assert.equal((withPosts!.get('Posts') as unknown[]).length, 2)
  assert.equal(await Post.count({ where: { userId: id } }), 2)
  assert.equal(await Post.destroy({ where: { userId: id } }), 2)
  await created.destroy()
  assert.equal(await User.findByPk(id), null)
})

test('a unique violation is Sequelize\'s UniqueConstraintError, carrying pg\'s fields', async () => {
  await User.create({ email: 'dup@example.com' })
  await assert.rejects(User.create({ email: 'dup@example.com' }), (err: Error & { name: string; parent?: { code?: string; constraint?: string } }) => {
    assert.equal(err.name, 'SequelizeUniqueConstraintError')
    assert.equal(err.parent?.code, '23505')
    assert.ok(err.parent?.constraint)
    return true
  })
})

test('transactions: managed commit and rollback, unmanaged, isolation levels, concurrent ones', async () => {
  await sequelize.transaction(async (t) => {
    await User.create({ email: 'tx1@example.com' }, { transaction: t })
  })
  assert.ok(await User.findOne({ where: { email: 'tx1@example.com' } }))
  await assert.rejects(
    sequelize.transaction(async (t) => {
      await User.create({ email: 'tx2@example.com' }, { transaction: t })
      throw new Error('undo')
    }),
    /undo/,
  )
  assert.equal(await User.findOne({ where: { email: 'tx2@example.com' } }), null)

  const t = await sequelize.transaction({ isolationLevel: Transaction.ISOLATION_LEVELS.SERIALIZABLE })
  await User.create({ email: 'tx3@example.com' }, { transaction: t })
  assert.equal(await User.count({ where: { email: 'tx3@example.com' } }), 0, 'not visible outside before commit')
  await t.rollback()
  assert.equal(await User.count({ where: { email: 'tx3@example.com' } }), 0)

  // More transactions than connections: each waits for one of its own.
  await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      sequelize.transaction(async (tx) => {
        await User.create({ email: `par${i}@example.com` }, { transaction: tx })
        await User.increment('visits', { by: 1, where: { email: `par${i}@example.com` }, transaction: tx })
      }),
    ),
  )
  assert.equal(await User.count({ where: { email: { [Op.like]: 'par%' } } }), 10)
})

test('raw queries with replacements and bind parameters', async () => {
  const rows = await sequelize.query<{ n: number; s: string }>('SELECT :n::int AS n, :s AS s', { replacements: { n: 7, s: "it's" }, type: QueryTypes.SELECT })
  assert.deepEqual(rows, [{ n: 7, s: "it's" }])
  const bound = await sequelize.query<{ total: string }>(`SELECT sum(visits) AS total FROM "${usersTable}" WHERE email LIKE $1`, { bind: ['par%'], type: QueryTypes.SELECT })
  assert.equal(bound[0]!.total, '10')
  const [, meta] = await sequelize.query(`UPDATE "${usersTable}" SET visits = visits + 1 WHERE email LIKE 'par%'`)
  assert.equal((meta as { rowCount: number }).rowCount, 10)
})
