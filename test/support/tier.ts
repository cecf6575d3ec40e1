// Two tiers of one suite, as Node.js keeps its long-running tests in test/pummel:
// `npm test` runs every file, the stress tests at sizes that still take each of
// their paths (a flood of a hundred thousand queries rather than two million, a
// few deep-pipeline runs rather than fifty); `npm run test:stress` runs the files
// tagged `// test-tags: stress` again at their full sizes. The runner sets the
// variable for the stress tier; a file reads its sizes through stressSize().
// The README ("Test tiers") lists every size that differs.

export const STRESS_ENV = 'PIPEGRES_TEST_STRESS'

/** Whether this process runs the stress tier. */
export const stressTier = (): boolean => process.env[STRESS_ENV] === '1'

/** `quick` in `npm test`, `full` in `npm run test:stress`. */
export function stressSize<T>(quick: T, full: T): T {
  return stressTier() ? full : quick
}
