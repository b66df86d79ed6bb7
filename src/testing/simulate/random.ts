/**
 * A small seeded PRNG (mulberry32): the simulator's only source of randomness, so one seed
 * replays one run exactly. Separate streams (`derive`) keep the fault plan, each node's network
 * and each node's scheduler from shifting each other when one of them draws more or fewer numbers.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** Uniform in [min, max]. */
  between(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** A whole number in [min, max]. */
  int(min: number, max: number): number {
    return Math.floor(this.between(min, max + 1 - 1e-9));
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  /** An independent stream named by `label` (same seed and label: same stream). */
  static derive(seed: number, label: string): Rng {
    let h = 2166136261 ^ (seed >>> 0);
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 16777619);
    return new Rng(h ^ Math.imul(seed >>> 0, 2654435761));
  }
}
