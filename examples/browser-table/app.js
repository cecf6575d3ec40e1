// The page's script: fetch a report, decode PostgreSQL's result messages with
// pipegres/wire while the body is still arriving, and render each row as soon
// as it is decoded.

import { parseStream, WireInterval, wireTypeName } from '/wire/index.js'

const form = document.getElementById('controls')
const reportInput = document.getElementById('report')
const countInput = document.getElementById('count')
const status = document.getElementById('status')
const thead = document.querySelector('#results thead')
const tbody = document.querySelector('#results tbody')

function hex(bytes) {
  return '\\x' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** JSON for arrays and json values, with the types JSON lacks written the way a cell shows them. */
function jsonText(value) {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? hex(v) : v))
}

/** How a decoded value is shown in a cell. */
export function cellText(value) {
  if (value === null) return 'NULL'
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value)
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Uint8Array) return hex(value)
  if (value instanceof WireInterval) return value.toString()
  return jsonText(value)
}

function setStatus(state, text, extra = {}) {
  status.dataset.state = state
  status.textContent = text
  for (const [k, v] of Object.entries(extra)) status.dataset[k] = String(v)
}

let current = null

async function run(report, count) {
  // A new run stops the one still streaming.
  current?.abort()
  const controller = new AbortController()
  current = controller
  thead.replaceChildren()
  tbody.replaceChildren()
  setStatus('loading', 'Loading…', { rows: 0, chunks: 0, bytes: 0 })

  let chunks = 0
  let bytes = 0
  let rows = 0
  // Counts what arrives, to show that the table grows while the body streams.
  const counter = new TransformStream({
    transform(chunk, out) {
      chunks++
      bytes += chunk.byteLength
      out.enqueue(chunk)
    },
  })
  try {
    const response = await fetch(`/data/${encodeURIComponent(report)}?count=${encodeURIComponent(count)}`, { signal: controller.signal })
    const source = response.ok ? response.body.pipeThrough(counter) : response
    const events = parseStream(source, { rowMode: 'array' })
    let batch = document.createDocumentFragment()
    for await (const ev of events) {
      if (ev.type === 'fields') {
        const tr = document.createElement('tr')
        for (const f of ev.fields) {
          const th = document.createElement('th')
          th.append(f.name + ' ')
          const type = document.createElement('small')
          type.textContent = wireTypeName(f.typeOid) ?? `oid ${f.typeOid}`
          th.append(type)
          tr.append(th)
        }
        thead.replaceChildren(tr)
      } else if (ev.type === 'row') {
        const tr = document.createElement('tr')
        for (const v of ev.row) {
          const td = document.createElement('td')
          td.textContent = cellText(v)
          if (v === null) td.className = 'null'
          tr.append(td)
        }
        batch.append(tr)
        rows++
        // One DOM insertion per hundred rows keeps long results fast while they still appear progressively.
        if (rows % 100 === 0) {
          tbody.append(batch)
          batch = document.createDocumentFragment()
          setStatus('loading', `Loading… ${rows} rows`, { rows, chunks, bytes })
        }
      } else if (ev.type === 'complete') {
        tbody.append(batch)
        const count = ev.rowCount === null ? '' : ` ${ev.rowCount}`
        setStatus('done', `${ev.command}${count} · ${rows} rows · ${bytes} bytes in ${chunks} chunks`, { rows, chunks, bytes, command: ev.command, rowCount: ev.rowCount ?? '' })
      } else if (ev.type === 'error') {
        tbody.append(batch)
        const e = ev.error
        setStatus('error', `ERROR ${e.code}: ${e.message}${e.detail ? ` (${e.detail})` : ''}`, { rows, chunks, bytes, code: e.code })
      } else if (ev.type === 'notice') {
        console.info(`${ev.notice.severity}: ${ev.notice.message}`)
      }
    }
    if (status.dataset.state === 'loading') {
      tbody.append(batch)
      setStatus('done', `no result · ${bytes} bytes`, { rows, chunks, bytes })
    }
  } catch (err) {
    if (controller.signal.aborted) return
    setStatus('failed', `Failed: ${err.message}`, { rows, chunks, bytes })
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault()
  const params = new URLSearchParams({ report: reportInput.value, count: countInput.value })
  history.replaceState(null, '', `?${params}`)
  void run(reportInput.value, countInput.value)
})

// The address says what to show, so a result can be linked to (and tested).
const initial = new URLSearchParams(location.search)
const initialReport = initial.get('report') ?? 'people'
reportInput.value = initialReport
countInput.value = initial.get('count') ?? '5000'
void run(initialReport, countInput.value)
