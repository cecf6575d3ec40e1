// What sql.subscribe() reads before it subscribes: the event pattern, as the
// key events are looked up by, and the publications option, checked so that a
// malformed one is refused at the call rather than by the server.

const OPERATIONS = new Set(['*', 'insert', 'update', 'delete'])

/**
 * A pattern as a key events are looked up by: `operation`, `operation:schema.table`
 * or `operation:schema.table=key`, the operation in lower case and the schema
 * `public` when none is given ('insert:users' → 'insert:public.users').
 */
export function parsePattern(pattern: unknown): string {
  if (typeof pattern !== 'string') throw new TypeError(`sql.subscribe() takes a pattern string such as '*', 'insert:users' or 'update:public.users=1' first, not ${pattern === null ? 'null' : typeof pattern}`)
  const bad = (why: string): TypeError => new TypeError(`Malformed subscribe pattern ${JSON.stringify(pattern)}: ${why}`)
  const text = pattern.trim()
  if (text === '') throw bad("give '*' for every change, or operation[:[schema.]table[=primary key]]")
  const colon = text.indexOf(':')
  const op = (colon < 0 ? text : text.slice(0, colon)).trim().toLowerCase() || '*'
  if (!OPERATIONS.has(op)) {
    throw bad(`the operation must be *, insert, update or delete${colon < 0 ? ` (for every change to a table: '*:${text}')` : ''}`)
  }
  if (colon < 0) return op
  const rest = text.slice(colon + 1)
  const eq = rest.indexOf('=')
  const path = (eq < 0 ? rest : rest.slice(0, eq)).trim()
  if (path === '') throw bad("no table after ':'")
  const dot = path.indexOf('.')
  const schema = dot < 0 ? 'public' : path.slice(0, dot)
  const table = dot < 0 ? path : path.slice(dot + 1)
  if (schema === '' || table === '') throw bad('the table is named as schema.table, with neither part empty')
  if (eq < 0) return `${op}:${schema}.${table}`
  const key = rest.slice(eq + 1)
  if (key === '') throw bad("no primary key value after '='")
  return `${op}:${schema}.${table}=${key}`
}

/**
 * The `publications` option (postgres.js passes it to the server as it is:
 * 'a, b' names two) as names: unquoted ones folded to lower case, as the server
 * folds them, "Quoted" ones kept as written.
 */
export function publicationNames(value: unknown): string[] {
  const text = Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join(',') : value
  const bad = (why: string): TypeError => new TypeError(`publications ${JSON.stringify(value)}: ${why}`)
  if (typeof text !== 'string') throw bad("give the publication names as a string, such as 'alltables' or 'orders, users'")
  const names: string[] = []
  let i = 0
  for (;;) {
    while (text[i] === ' ' || text[i] === '\t') i++
    let name: string
    if (text[i] === '"') {
      name = ''
      for (i++; ; i++) {
        if (i >= text.length) throw bad('a quoted name is not closed')
        if (text[i] === '"') {
          if (text[i + 1] !== '"') break
          i++
        }
        name += text[i]
      }
      i++
    } else {
      const end = text.indexOf(',', i)
      name = text.slice(i, end < 0 ? text.length : end).trim().toLowerCase()
      i = end < 0 ? text.length : end
    }
    if (name === '') throw bad('a publication name is empty')
    names.push(name)
    while (text[i] === ' ' || text[i] === '\t') i++
    if (i >= text.length) return names
    if (text[i] !== ',') throw bad(`expected ',' after "${name}"`)
    i++
  }
}
