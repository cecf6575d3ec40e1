import { test } from 'node:test'
import assert from 'node:assert/strict'
import { withHugePages, withoutHugePages } from '../../support/servers/os.js'

test('withHugePages adds the malloc tunable, keeps other tunables, and leaves a hugetlb setting already made', () => {
  assert.equal(withHugePages(undefined), 'glibc.malloc.hugetlb=1')
  assert.equal(withHugePages(''), 'glibc.malloc.hugetlb=1')
  assert.equal(withHugePages('glibc.malloc.arena_max=2'), 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1')
  assert.equal(withHugePages('glibc.malloc.hugetlb=0'), 'glibc.malloc.hugetlb=0')
  assert.equal(withHugePages('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2'), 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2')
  // A tunable whose name only ends the same is another one.
  assert.equal(withHugePages('x.glibc.malloc.hugetlb=0'), 'x.glibc.malloc.hugetlb=0:glibc.malloc.hugetlb=1')
})

test('withoutHugePages takes back only what withHugePages added', () => {
  assert.equal(withoutHugePages(withHugePages(undefined)), undefined)
  assert.equal(withoutHugePages(withHugePages('glibc.malloc.arena_max=2')), 'glibc.malloc.arena_max=2')
  assert.equal(withoutHugePages('glibc.malloc.hugetlb=0'), 'glibc.malloc.hugetlb=0')
  assert.equal(withoutHugePages(undefined), undefined)
})
