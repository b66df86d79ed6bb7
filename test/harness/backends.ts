import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/** Backends that need a server process; the global setup starts a throwaway one of each. */
export type ServerBackend = 'postgres' | 'mysql' | 'redis' | 'etcd';

export interface ProvidedBackend {
  /** Connection URL of a ready server, when one could be started or was given by env. */
  url?: string;
  /** Why there is no server (only ever set outside CI: in CI the setup fails instead). */
  error?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    oncelyBackends: Record<ServerBackend, ProvidedBackend>;
  }
}

export interface BackendTarget {
  url: string | undefined;
  /** Pass to `describeStore(…, { skip })`: set when the backend is unavailable outside CI. */
  skip: string | undefined;
}

/** The server for `name` that the global setup provided, or the reason to skip its tests. */
export function serverBackend(name: ServerBackend): BackendTarget {
  const provided = inject('oncelyBackends')?.[name] ?? { error: 'global setup did not run' };
  if (provided.url) return { url: provided.url, skip: undefined };
  const reason = `${name} unavailable: ${provided.error ?? 'unknown reason'}`;
  if (process.env.CI === 'true') throw new Error(`CI=true and ${reason}`);
  return { url: undefined, skip: reason };
}

/** A table/key prefix no other test file uses, so suites can share a server. */
export function testPrefix(label: string): string {
  return `t_${label.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 12)}_${randomBytes(4).toString('hex')}_`;
}
