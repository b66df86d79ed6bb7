import { createHash } from 'node:crypto';

/** A Lua script and its SHA-1, so a call is one EVALSHA (EVAL only after a NOSCRIPT). */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

export function luaScript(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}
