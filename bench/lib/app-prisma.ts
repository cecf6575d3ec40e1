import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { APP_TABLE } from './app.js'

// Prisma Client for the app workload, generated offline by the prisma-client
// generator (TypeScript) and compiled with the repository's TypeScript, once
// per schema: later child processes reuse it. Prisma's CLI looks for its
// schema engine at start-up although generate never runs it; naming any
// existing file in PRISMA_SCHEMA_ENGINE_BINARY stops a download attempt.

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

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

model User {
  id       String  @id @db.Uuid
  name     String?
  email    String?
  password String?
  @@map("${APP_TABLE}")
}
`

export interface AppPrismaClient {
  user: { findUnique(args: { where: { id: string }; select: { id: true; name: true; email: true } }): Promise<{ id: string; name: string | null; email: string | null } | null> }
  $disconnect(): Promise<void>
}

export async function appPrismaClient(): Promise<new (options: { adapter: unknown }) => AppPrismaClient> {
  const dir = join(tmpdir(), `pipegres-bench-prisma-${createHash('sha256').update(schema).digest('hex').slice(0, 12)}`)
  const out = join(dir, 'out', 'client.js')
  if (!existsSync(out)) {
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'schema.prisma'), schema)
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }')
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
    const compilerOptions = { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', rootDir: 'generated', outDir: 'out', skipLibCheck: true, types: [] }
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['generated'] }))
    const env = { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' }
    execFileSync(process.execPath, [join(root, 'node_modules', 'prisma', 'build', 'index.js'), 'generate', '--schema', 'schema.prisma'], { cwd: dir, env, stdio: 'ignore' })
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir, stdio: 'ignore' })
  }
  const mod = (await import(pathToFileURL(out).href)) as { PrismaClient: new (options: { adapter: unknown }) => AppPrismaClient }
  return mod.PrismaClient
}
