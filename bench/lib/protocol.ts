// What the benchmark runner and its client processes say to each other: the
// runner starts one child per (round, client, workload) with a Task as JSON in
// argv, and the child prints one line of JSON: a Measurement.

export interface Target {
  host: string
  port: number
  user: string
  password: string
  database: string
}

export interface Task {
  target: Target
  workload: string
  /** Workload size (rows or queries), and client variant (e.g. 'binary' or 'text'). */
  size: number
  variant: string
  /** Measured repetitions inside the child, after one warm-up. */
  repeat: number
  /** The postmaster's pid: the child samples the CPU time of the whole server around each repetition. */
  serverPid?: number
  /** A file the workload reads instead of a server (the codec microbenchmarks' captured bytes). */
  fixture?: string
}

export interface Measurement {
  /** Rows or queries per repetition. */
  units: number
  /** Wall time of each repetition, ms. */
  wallMs: number[]
  /** Client CPU (user + system) of each repetition, µs. */
  cpuUs: number[]
  /** Server CPU (every process of the server) of each repetition, µs; absent where it cannot be read. */
  serverCpuUs?: number[]
  /** Wall time over which serverCpuUs was read, ms, where it is not wallMs (pgbench's rate leaves out connecting). */
  serverWallMs?: number[]
  /** Latency percentiles of each repetition, µs, for workloads that time every query. */
  p50Us?: number[]
  p99Us?: number[]
  /** Peak resident set size of the process, bytes. */
  peakRss: number
  /** A checksum of what was read, so that a client cannot skip work unnoticed. */
  check: string
}

/** What each client module implements: run one workload, return per-repetition timings. */
export type WorkloadRunner = (task: Task) => Promise<Measurement>
