// Command-line flags of the standalone benchmarks (bench:pooler, bench:soak, bench:cluster).

/** `--name N`: a positive whole number, or `fallback` when the flag is absent. */
export function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`)
  if (at < 0) return fallback
  const n = Number(process.argv[at + 1])
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} needs a positive whole number`)
  return n
}
