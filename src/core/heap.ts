/**
 * A binary heap kept in a plain array, ordered by `first(a, b)`: true when `a` must come out
 * before `b`. The element that comes out first is always at index 0; an element's children are
 * at 2i + 1 and 2i + 2. Used where a walk over every element at each question was the cost
 * (timers of the simulator, expected due moves, history merged from many sources).
 */
export type First<T> = (a: T, b: T) => boolean;

/** Adds `v` to the heap `h`. */
export function heapPush<T>(h: T[], v: T, first: First<T>): void {
  h.push(v);
  let i = h.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!first(h[i] as T, h[parent] as T)) break;
    [h[i], h[parent]] = [h[parent] as T, h[i] as T];
    i = parent;
  }
}

/** Removes and returns the element of `h` that comes first; undefined when `h` is empty. */
export function heapPop<T>(h: T[], first: First<T>): T | undefined {
  if (h.length === 0) return undefined;
  const top = h[0] as T;
  const last = h.pop() as T;
  if (h.length === 0) return top;
  h[0] = last;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < h.length && first(h[l] as T, h[m] as T)) m = l;
    if (r < h.length && first(h[r] as T, h[m] as T)) m = r;
    if (m === i) break;
    [h[i], h[m]] = [h[m] as T, h[i] as T];
    i = m;
  }
  return top;
}
