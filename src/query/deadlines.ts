// Query timeouts without a runtime timer per query. Queries given the same
// timeout expire in the order they were issued, so the watches of each
// distinct timeout value form a list ordered by deadline, and one timer per
// list waits for its first deadline. Adding and removing are O(1) (a doubly
// linked list, the watch itself being the node). A Node timer per query cost
// an object with its closure, async ids and list links, about 350 bytes of
// heap per queued query, and a million queries queued with a timeout held a
// million of them.

export interface Expiring {
  /** performance.now() at which it expires. */
  deadline: number
  prev: Expiring | null
  next: Expiring | null
  /** The list it is in; null once removed or expired. */
  list: DeadlineList | null
  /** Called once, when the deadline has passed, already removed from its list. */
  expire(): void
}

export class DeadlineList {
  head: Expiring | null = null
  tail: Expiring | null = null
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  constructor(readonly timeout: number) {}
}

const lists = new Map<number, DeadlineList>()

/** setTimeout's longest delay; a later deadline is waited for in steps. */
const MAX_DELAY = 2 ** 31 - 1

/**
 * Runtime timers may fire up to a millisecond before performance.now() says
 * the delay has passed (they count whole milliseconds of a cached loop time);
 * a deadline that close counts as reached, as it would for a timer of its own.
 */
const EARLY = 1

/**
 * The clock read once for all the queries issued in one synchronous run, as a
 * runtime timer reads its loop's cached time: queries issued together with the
 * same timeout get the same deadline and expire in the same pass. Read each
 * time, a burst of them spread over more than EARLY on a busy machine, and the
 * later ones were still pending when the first one's failed cancel closed the
 * connection (a ConnectionError where a TimeoutError was due).
 */
let burstStart: number | undefined
const endBurst = (): void => {
  burstStart = undefined
}

function now(): number {
  if (burstStart === undefined) {
    burstStart = performance.now()
    queueMicrotask(endBurst)
  }
  return burstStart
}

/** Puts `e` at the end of the list of its timeout (ms, positive), its deadline `timeout` from now. */
export function addDeadline(e: Expiring, timeout: number): void {
  let list = lists.get(timeout)
  if (list === undefined) lists.set(timeout, (list = new DeadlineList(timeout)))
  e.deadline = now() + timeout
  e.list = list
  e.next = null
  e.prev = list.tail
  if (list.tail === null) {
    list.head = e
    arm(list, e.deadline)
  } else list.tail.next = e
  list.tail = e
}

/** Takes `e` out of its list, if it is in one. A list left empty stops its timer and is forgotten. */
export function removeDeadline(e: Expiring): void {
  const list = e.list
  if (list === null) return
  if (e.prev === null) list.head = e.next
  else e.prev.next = e.next
  if (e.next === null) list.tail = e.prev
  else e.next.prev = e.prev
  e.prev = e.next = e.list = null
  // A removed head leaves the timer set for its deadline: fire() then waits on for the new head.
  if (list.head === null) forget(list)
}

function forget(list: DeadlineList): void {
  if (list.timer !== undefined) clearTimeout(list.timer)
  list.timer = undefined
  if (lists.get(list.timeout) === list) lists.delete(list.timeout)
}

function arm(list: DeadlineList, deadline: number): void {
  const delay = Math.min(Math.max(deadline - performance.now(), 1), MAX_DELAY)
  // A closure rather than setTimeout's extra arguments, which not every runtime passes on.
  list.timer = setTimeout(() => fire(list), delay)
}

/** Expires every watch of the list whose deadline has come, then waits for the next one. */
function fire(list: DeadlineList): void {
  list.timer = undefined
  // The clock decides which watches are due, not the timer: it was set for the head, and a head
  // removed early leaves it set for a deadline before the new head's.
  const now = performance.now()
  let thrown: { err: unknown } | undefined
  // The head is read again each turn: expiring one query may settle or remove others of this list.
  for (let e = list.head; e !== null && e.deadline <= now + EARLY; e = list.head) {
    list.head = e.next
    if (e.next === null) list.tail = null
    else e.next.prev = null
    e.prev = e.next = e.list = null
    try {
      e.expire()
    } catch (err) {
      // As a timer's callback throwing would: uncaught, but the other queries still expire.
      thrown ??= { err }
    }
  }
  if (list.head === null) forget(list)
  else if (list.timer === undefined) arm(list, list.head.deadline)
  if (thrown !== undefined) {
    const { err } = thrown
    queueMicrotask(() => {
      throw err
    })
  }
}
