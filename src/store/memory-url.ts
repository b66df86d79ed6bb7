import type { BackendOptions } from './backend-options.js';
import { MemoryStore } from './memory.js';

/** `memory:` is a private space; `memory:NAME` is shared by every store opened with that NAME (and prefix). */
export function fromUrl(url: string, options: BackendOptions): MemoryStore {
  const name = url.slice('memory:'.length);
  return name === '' ? new MemoryStore() : new MemoryStore({ space: `${options.prefix}/${name}` });
}
