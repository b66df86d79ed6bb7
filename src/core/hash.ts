/**
 * A fast, stable 32-bit string hash every node computes alike (no randomness, no platform
 * dependence): FNV-1a over the UTF-16 code units, then murmur3's 32-bit finaliser so that nearby
 * keys spread. Used for rendezvous hashing of occurrences over nodes (scheduler/control/spread.ts)
 * and for jitter offsets (schedule/jitter.ts). Not for anything an adversary must not predict.
 */

/** FNV-1a's initial state. */
export const FNV_OFFSET = 0x811c9dc5;

/** FNV-1a's state after `text`, starting from state `h` (32-bit, signed as Math.imul leaves it). */
export function fnv1a(h: number, text: string): number {
  let x = h;
  for (let i = 0; i < text.length; i++) {
    x ^= text.charCodeAt(i);
    x = Math.imul(x, 0x01000193);
  }
  return x;
}

/** murmur3's 32-bit finaliser: every input bit moves about half of the output bits. Unsigned. */
export function mix32(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over `text`, then the finaliser: unsigned 32 bits. */
export function hash32(text: string): number {
  return mix32(fnv1a(FNV_OFFSET, text));
}
