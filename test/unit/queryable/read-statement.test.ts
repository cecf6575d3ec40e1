// Which statements the coalesce option may share: plain reads only. Anything
// the scanner sees as a write, a lock, a session change or a second statement
// runs alone; keywords inside quotes, dollar quotes and comments change nothing.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isPlainRead } from '../../../src/queryable/read-statement.js'

test('plain reads may be shared', () => {
  for (const text of [
    'SELECT 1',
    '  select * from users where id = $1',
    '/* hot */ SELECT name FROM users WHERE id = $1',
    '-- by id\nSELECT name FROM users WHERE id = $1;',
    'VALUES (1), (2)',
    'TABLE users',
    'WITH x AS (SELECT 1) SELECT * FROM x',
    "SELECT 'update delete insert' AS words",
    'SELECT "update", "into" FROM t',
    "SELECT $$ ; DELETE FROM t $$",
    "SELECT $tag$ insert $tag$",
    "SELECT E'it\\'s; update' AS s",
    'SELECT 1 /* ; delete */',
    'SELECT updated_at, inserted, deleted_by FROM t',
    'SELECT random(), now(), nextval($1)',
    'SELECT a$update FROM t',
    'SELECT 1;   ',
    'SELECT 1; -- done',
  ]) {
    assert.equal(isPlainRead(text), true, text)
  }
})

test('writes, locks, session changes and anything not a read run alone', () => {
  for (const text of [
    'INSERT INTO t VALUES (1)',
    'UPDATE t SET a = 1',
    'DELETE FROM t',
    'MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE',
    'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d',
    'WITH u AS (UPDATE t SET a = 1 RETURNING a) SELECT a FROM u',
    'SELECT * INTO copy_of_t FROM t',
    'SELECT * FROM t FOR UPDATE',
    'SELECT * FROM t FOR NO KEY UPDATE',
    'SELECT * FROM t FOR SHARE',
    'SELECT * FROM t FOR KEY SHARE',
    "SELECT set_config('search_path', 'x', false)",
    'SELECT pg_advisory_lock(1)',
    'SELECT pg_try_advisory_lock(1)',
    "SELECT pg_notify('c', 'p')",
    "SELECT setval('s', 1)",
    'SELECT lo_create(0)',
    'SELECT pg_terminate_backend($1)',
    'SHOW search_path',
    'SET search_path = x',
    'BEGIN',
    'COMMIT',
    'LISTEN c',
    'COPY t TO STDOUT',
    'CREATE TABLE t (a int)',
    'EXPLAIN ANALYZE DELETE FROM t',
    'CALL p()',
    'DO $$ BEGIN END $$',
    'SELECT 1; SELECT 2',
    "SELECT 1; 'x'",
    '',
    '   ',
    '/* only a comment */',
  ]) {
    assert.equal(isPlainRead(text), false, text)
  }
})
