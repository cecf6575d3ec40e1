// pipegres/postgres without a server: which texts without parameters keep the
// simple protocol (several statements, none, or a text the scan is unsure of).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { needsSimple } from '../../../../src/integrations/postgres/statements.js'

test('one statement (a trailing semicolon and comments allowed) goes by the extended protocol', () => {
  for (const text of [
    'select 1',
    'select 1;',
    'select 1 ;  -- done\n',
    "select ';' as a, 'it''s' as b",
    'select ";" from t',
    'select $$;$$, $x$ ; $$ ; $x$',
    'select $1',
    'select a$b from t',
    '/* ; /* nested ; */ ; */ select 1',
    'insert into t values (1); -- ; select 2',
  ]) {
    assert.equal(needsSimple(text), false, text)
  }
})

test('several statements, none, or an unsure text keep the simple protocol', () => {
  for (const text of [
    'select 1; select 2',
    'begin; select 1; commit',
    '',
    '   ',
    '-- only a comment',
    ';select 1',
    "select 'unterminated",
    'select $$ unterminated',
    '/* unterminated',
    "select E'\\'; select 2'",
    "select 'a\\'",
  ]) {
    assert.equal(needsSimple(text), true, JSON.stringify(text))
  }
})
