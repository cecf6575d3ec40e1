import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseCommandTag } from '../../../src/query/result.js'

// Command tags read into a command and a row count, without a server.

test('command tags: command and row count', () => {
  const cases: [string, string, number | null][] = [
    ['SELECT 5', 'SELECT', 5],
    ['INSERT 0 12', 'INSERT', 12],
    ['UPDATE 0', 'UPDATE', 0],
    ['DELETE 3', 'DELETE', 3],
    ['MERGE 2', 'MERGE', 2],
    ['FETCH 10', 'FETCH', 10],
    ['MOVE 4', 'MOVE', 4],
    ['COPY 1000000', 'COPY', 1000000],
    ['CREATE TABLE', 'CREATE TABLE', null],
    ['DROP INDEX', 'DROP INDEX', null],
    ['BEGIN', 'BEGIN', null],
    ['SET', 'SET', null],
    ['', '', null],
    ['SELECT', 'SELECT', null],
    // Not the shape of a counted tag: all command, no count read out of it.
    ['SELECT 1 2', 'SELECT 1 2', null],
    ['SELECT 0x10', 'SELECT 0x10', null],
    ['SELECT ', 'SELECT ', null],
    ['INSERT 5', 'INSERT 5', null],
  ]
  for (const [tag, command, rowCount] of cases) assert.deepEqual(parseCommandTag(tag), { command, rowCount }, tag)
})
