import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { repoRoot as root } from '../../support/paths.js'

// The core has no runtime dependencies: importing pipegres must not load an
// ORM, even though the ORM integrations live in the same package.


/** Every module URL a child process resolves while it imports `entry`. */
function loadedBy(entry: string): Promise<string[]> {
  const hooks = `
    let port
    export function initialize(data) { port = data.port }
    export async function resolve(specifier, context, next) {
      const r = await next(specifier, context)
      port.postMessage(r.url)
      return r
    }`
  const child = `
    import { register } from 'node:module'
    import { MessageChannel } from 'node:worker_threads'
    const { port1, port2 } = new MessageChannel()
    const seen = []
    const sentinel = 'data:text/javascript,export default 0'
    port1.on('message', (url) => {
      // Messages arrive in order: once the sentinel's resolution is seen, so is every earlier one.
      if (url === sentinel) {
        console.log(JSON.stringify(seen))
        port1.close()
      } else seen.push(url)
    })
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), { data: { port: port2 }, transferList: [port2] })
    await import(${JSON.stringify(entry)})
    await import(sentinel)`
  return new Promise((res, rej) => {
    execFile(process.execPath, ['--input-type=module', '-e', child], { cwd: root, timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) rej(new Error(`the child process failed: ${stderr || err.message}`))
      else res(JSON.parse(stdout) as string[])
    })
  })
}

const orm = /node_modules\/(kysely|drizzle-orm|@prisma|prisma)\//

test("import 'pipegres' loads no ORM module", async () => {
  const seen = await loadedBy(pathToFileURL(join(root, 'build', 'src', 'index.js')).href)
  assert.ok(seen.some((url) => url.endsWith('/build/src/client.js')), 'the hook saw the core load')
  assert.deepEqual(seen.filter((url) => orm.test(url)), [])
  assert.deepEqual(seen.filter((url) => url.includes('/integrations/')), [])
})

test('the check itself sees an ORM when one is loaded', async () => {
  const seen = await loadedBy(pathToFileURL(join(root, 'build', 'src', 'integrations', 'kysely', 'index.js')).href)
  assert.ok(seen.some((url) => orm.test(url)))
})
