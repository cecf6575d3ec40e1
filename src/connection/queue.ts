/**
 * A FIFO on a growable ring. Array#shift is O(n) once an array leaves V8's
 * fast small-array path, and a pipeline can hold a hundred thousand requests.
 */
export class Queue<T> {
  private slots: (T | undefined)[]
  private head = 0
  private count = 0

  // Capacity is a power of two so that wrapping is a mask, not a division.
  private mask: number

  constructor(capacity = 64) {
    let size = 8
    while (size < capacity) size *= 2
    this.slots = new Array(size)
    this.mask = size - 1
  }

  get length(): number {
    return this.count
  }

  push(item: T): void {
    const items = this.slots
    if (this.count === items.length) {
      this.grow()
      return this.push(item)
    }
    items[(this.head + this.count) & this.mask] = item
    this.count++
  }

  /** Puts an item at the head. */
  unshift(item: T): void {
    if (this.count === this.slots.length) this.grow()
    this.head = (this.head - 1) & this.mask
    this.slots[this.head] = item
    this.count++
  }

  peek(): T | undefined {
    return this.count === 0 ? undefined : this.slots[this.head]
  }

  /** The item pushed last, or undefined. */
  peekLast(): T | undefined {
    return this.count === 0 ? undefined : this.slots[(this.head + this.count - 1) & this.mask]
  }

  /** The item after the head, or undefined. */
  peekSecond(): T | undefined {
    return this.count < 2 ? undefined : this.slots[(this.head + 1) & this.mask]
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined
    const items = this.slots
    const item = items[this.head]
    items[this.head] = undefined
    this.head = (this.head + 1) & this.mask
    this.count--
    return item
  }

  /** Every item, oldest first, without removing them. */
  *items(): IterableIterator<T> {
    for (let i = 0; i < this.count; i++) yield this.slots[(this.head + i) & this.mask]!
  }

  /** Removes and returns every item, oldest first. */
  drain(): T[] {
    const out: T[] = []
    for (let item = this.shift(); item !== undefined; item = this.shift()) out.push(item)
    return out
  }

  private grow(): void {
    const old = this.slots
    const next: (T | undefined)[] = new Array(old.length * 2)
    for (let i = 0; i < this.count; i++) next[i] = old[(this.head + i) & this.mask]
    this.slots = next
    this.mask = next.length - 1
    this.head = 0
  }
}
