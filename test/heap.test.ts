import { describe, expect, it } from 'vitest';
import { heapPop, heapPush } from '../src/core/heap.js';

describe('heap (src/core/heap.ts)', () => {
  it('gives back what was pushed in the order `first` says, pushes and pops interleaved', () => {
    let r = 7;
    const rand = () => {
      r = (r * 1_103_515_245 + 12_345) % 2_147_483_648;
      return r % 1_000;
    };
    const h: number[] = [];
    const model: number[] = [];
    const first = (a: number, b: number) => a < b;
    for (let step = 0; step < 5_000; step++) {
      if (rand() < 600) {
        const v = rand();
        heapPush(h, v, first);
        model.push(v);
      } else {
        model.sort((a, b) => a - b);
        expect(heapPop(h, first)).toBe(model.shift());
      }
    }
    model.sort((a, b) => a - b);
    const rest: number[] = [];
    for (let v = heapPop(h, first); v !== undefined; v = heapPop(h, first)) rest.push(v);
    expect(rest).toEqual(model);
    expect(heapPop(h, first)).toBeUndefined();
  });
});
