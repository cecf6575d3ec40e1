import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { uniqueName } from '../client.js'
import { repoRoot as root } from '../paths.js'
import { installedPackage } from '../peers/installed.js'

// Prisma Client for the Prisma tests: the `prisma-client` generator writes
// TypeScript, generated offline from a schema with table names of this run,
// then compiled with the repository's TypeScript. Prisma's CLI looks for its
// schema engine at start-up even though `generate` never runs it; pointing
// PRISMA_SCHEMA_ENGINE_BINARY at any file stops it downloading one.

export const names = {
  users: uniqueName('pr_users'),
  posts: uniqueName('pr_posts'),
  role: uniqueName('pr_role'),
}

const schema = `
generator client {
  provider            = "prisma-client"
  output              = "./generated"
  moduleFormat        = "esm"
  importFileExtension = "js"
}

datasource db {
  provider = "postgresql"
}

enum Role {
  USER
  ADMIN
  @@map("${names.role}")
}

model User {
  id        Int       @id @default(autoincrement())
  email     String    @unique
  name      String?
  profile   Json?
  balance   Decimal?  @db.Decimal(12, 2)
  big       BigInt?
  born      DateTime? @db.Date
  seen      DateTime? @db.Timestamptz(6)
  wake      DateTime? @db.Time(6)
  createdAt DateTime  @default(now())
  avatar    Bytes?
  tags      String[]
  role      Role      @default(USER)
  score     Float?
  active    Boolean   @default(true)
  uid       String?   @db.Uuid
  posts     Post[]
  @@map("${names.users}")
}

model Post {
  id       Int    @id @default(autoincrement())
  title    String
  authorId Int
  author   User   @relation(fields: [authorId], references: [id])
  @@map("${names.posts}")
}
`

export const ddl = `
CREATE TYPE "${names.role}" AS ENUM ('USER', 'ADMIN');
CREATE TABLE "${names.users}" (
  id serial PRIMARY KEY, email text NOT NULL UNIQUE, name text, profile jsonb, balance numeric(12,2), big int8,
  born date, seen timestamptz(6), wake time(6), "createdAt" timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP, avatar bytea,
  tags text[], role "${names.role}" NOT NULL DEFAULT 'USER', score float8, active bool NOT NULL DEFAULT true, uid uuid);
CREATE TABLE "${names.posts}" (id serial PRIMARY KEY, title text NOT NULL, "authorId" int NOT NULL REFERENCES "${names.users}"(id));
`

export const dropDdl = `DROP TABLE IF EXISTS "${names.posts}", "${names.users}"; DROP TYPE IF EXISTS "${names.role}"`

function run(file: string, args: string[], cwd: string): Promise<void> {
  const env = { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' }
  return new Promise((res, rej) => {
    execFile(process.execPath, [file, ...args], { cwd, env, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) rej(new Error(`${args[0]} failed: ${stderr || stdout || err.message}`))
      else res()
    })
  })
}

export interface GeneratedClient {
  // The generated module's shape is known only once it exists.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  PrismaClient: new (options: { adapter: unknown }) => any
  cleanup(): void
}

/** Generates and compiles Prisma Client for the schema above; returns its PrismaClient class. */
export async function generateClient(): Promise<GeneratedClient> {
  const dir = mkdtempSync(join(tmpdir(), 'pipegres-prisma-'))
  writeFileSync(join(dir, 'schema.prisma'), schema)
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }')
  // The node_modules that Prisma Client comes from (the project's, or that of the release
  // `npm run test:peers` runs): the generated code compiles against it and the CLI beside it generates it.
  const client = installedPackage('@prisma/client').dir
  const modules = dirname(dirname(client))
  symlinkSync(modules, join(dir, 'node_modules'), 'dir')
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', rootDir: 'generated', outDir: 'out', skipLibCheck: true, strict: false, types: [] },
      include: ['generated'],
    }),
  )
  await run(join(installedPackage('prisma').dir, 'build', 'index.js'), ['generate', '--schema', 'schema.prisma'], dir)
  await run(join(root, 'node_modules', 'typescript', 'bin', 'tsc'), ['-p', 'tsconfig.json'], dir)
  const mod = (await import(pathToFileURL(join(dir, 'out', 'client.js')).href)) as { PrismaClient: GeneratedClient['PrismaClient'] }
  return { PrismaClient: mod.PrismaClient, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}
