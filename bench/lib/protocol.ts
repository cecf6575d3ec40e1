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
}

export interface Measurement {
  /** Rows or queries per repetition. */
  units: number
  /** Wall time of each repetition, ms. */
  wallMs: number[]
  /** Client CPU (user + system) of each repetition, µs. */
  cpuUs: number[]
  /** Peak resident set size of the process, bytes. */
  peakRss: number
  /** A checksum of what was read, so that a client cannot skip work unnoticed. */
  check: string
}

/** What each client module implements: run one workload, return per-repetition timings. */
export type WorkloadRunner = (task: Task) => Promise<Measurement>
