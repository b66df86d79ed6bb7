/**
 * The one method oncely needs from a Redis client: ioredis' `call(command, ...args)`. An ioredis
 * `Redis` or `Cluster` satisfies it as it is. Command names are passed in lower case, the form
 * ioredis looks up to find key arguments, so a client `keyPrefix` and Cluster slot routing apply.
 */
export interface RedisClientLike {
  /** Sends one command (`call('set', key, value)`) and resolves to its reply. */
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
}

/**
 * What `new RedisStore(options)` accepts: `client` (yours) or `url` (the store's own client).
 *
 * @example
 * new RedisStore({ client: new Redis(process.env.REDIS_URL!) });
 */
export interface RedisStoreOptions {
  /** An existing client (ioredis `Redis` or `Cluster`). It stays yours: `close()` never quits it. */
  client?: RedisClientLike;
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (TLS); the store owns this client. */
  url?: string;
  /** Key prefix, letters/digits/`_` (default `oncely_`); keys are `{prefix}…`. */
  prefix?: string;
  /** With `url`: connect timeout, and the bound on each command (default 10 s). */
  connectTimeoutMs?: number;
}
