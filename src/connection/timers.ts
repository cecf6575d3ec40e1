// Timers that must not keep a process alive. Node, Bun and Deno return an
// object with unref(); Cloudflare Workers' global setTimeout returns a number
// (a Worker has no process to keep alive), so unref() is called where it exists.

export function unrefTimer<T>(timer: T): T {
  ;(timer as { unref?: () => unknown }).unref?.()
  return timer
}
