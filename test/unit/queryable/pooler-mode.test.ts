// What a transaction-mode pooler cannot keep: statements that would leave
// state on a server session are found by their leading keywords, in any
// statement of a string, and never inside quotes, dollar quotes or comments.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ArgumentError } from '../../../src/errors.js'
import { refuseSessionState, sessionStatement } from '../../../src/queryable/pooler-mode.js'

test('statements that leave state on the session are named', () => {
  const cases: [string, string][] = [
    ['LISTEN jobs', 'LISTEN'],
    ['  listen "Jobs"', 'LISTEN'],
    ['SET search_path = app', 'SET'],
    ['set statement_timeout to 5000', 'SET'],
    ['SET SESSION statement_timeout = 1', 'SET'],
    ['SET SESSION AUTHORIZATION bob', 'SET'],
    ['SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY', 'SET'],
    ['RESET ALL', 'RESET'],
    ['PREPARE q AS SELECT 1', 'PREPARE'],
    ['DECLARE c CURSOR WITH HOLD FOR SELECT 1', 'DECLARE ... WITH HOLD'],
    ['declare c no scroll cursor with\n hold for select 1', 'DECLARE ... WITH HOLD'],
    ['CREATE TEMP TABLE t (a int)', 'CREATE TEMP TABLE'],
    ['CREATE TEMPORARY TABLE t AS SELECT 1', 'CREATE TEMP TABLE'],
    ['CREATE LOCAL TEMP TABLE t (a int)', 'CREATE TEMP TABLE'],
    ['-- a comment\nLISTEN jobs', 'LISTEN'],
    ['/* a /* nested */ comment */ SET x = 1', 'SET'],
    ['SELECT 1; SET search_path = app', 'SET'],
    ["SELECT ';'; LISTEN a", 'LISTEN'],
    ["SELECT E'\\';'; LISTEN a", 'LISTEN'],
    ['SELECT $$;$$; LISTEN a', 'LISTEN'],
    ['SELECT $tag$ ; $x$ ; $tag$; RESET x', 'RESET'],
    ['SELECT "a;b" FROM t; LISTEN a', 'LISTEN'],
  ]
  for (const [text, name] of cases) assert.equal(sessionStatement(text), name, text)
})

test('statements that end with their transaction, and ones that only look alike, pass', () => {
  const cases = [
    'SELECT 1',
    'SET LOCAL search_path = app',
    'SET TRANSACTION ISOLATION LEVEL SERIALIZABLE',
    'set constraints all deferred',
    'PREPARE TRANSACTION \'t1\'',
    'DECLARE c CURSOR FOR SELECT 1',
    'CREATE TEMP TABLE t (a int) ON COMMIT DROP',
    'CREATE TABLE settings (a int)',
    "SELECT 'LISTEN x; SET y = 1'",
    'SELECT 1 -- ; LISTEN x',
    'SELECT 1 /* ; SET x = 1 */',
    'SELECT $$ ; LISTEN x $$',
    "SELECT ''';LISTEN x'''",
    'UPDATE t SET a = 1',
    'INSERT INTO listen_log VALUES (1)',
    'SELECT a$b$ FROM t; SELECT 2',
    'SELECT $1::int; SELECT 2',
    '',
    ';;',
  ]
  for (const text of cases) assert.equal(sessionStatement(text), null, text)
})

test('the refusal names the statement, the pooler option and what to do instead', () => {
  assert.throws(
    () => refuseSessionState('SET search_path = app'),
    (e: unknown) => e instanceof ArgumentError && /^SET cannot work through a transaction-mode pooler \(pooler: 'transaction'\): .*SET LOCAL/.test(e.message),
  )
  assert.doesNotThrow(() => refuseSessionState('SELECT 1'))
})
