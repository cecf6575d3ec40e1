import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fetchValue, echoParam } from '../../support/codecs/raw-values.js'

// The raw-value helper the codec tests rely on: it must report exactly what the server sends.

test('fetches a value in text and in binary', async () => {
  assert.deepEqual(await fetchValue("'12'::int4", 0), Buffer.from('12'))
  assert.deepEqual(await fetchValue("'12'::int4", 1), Buffer.from([0, 0, 0, 12]))
  assert.equal(await fetchValue('NULL::int4', 1), null)
})

test('echoes a parameter back as the server understood it', async () => {
  assert.equal(await echoParam(23, 1, Buffer.from([0, 0, 1, 0])), '256')
  assert.equal(await echoParam(23, 0, Buffer.from('77')), '77')
  assert.equal(await echoParam(23, 1, null), null)
  await assert.rejects(echoParam(23, 1, Buffer.from([1])), /insufficient data|invalid/)
})
