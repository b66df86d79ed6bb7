import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * The dashboard's HTTP server and its socket limits. Without them (Fastify's defaults are 0, "no
 * limit") 600 sockets that sent POST headers and then a byte of body every 10 s stayed open for
 * minutes, unauthenticated, until the process ran out of file descriptors (issue 29, finding 2).
 *
 * - `headersTimeoutMs` (10 s): the request line and headers must have arrived by then;
 * - `requestTimeoutMs` (default 30 s): the whole request, body included;
 * - an idle socket is closed after `requestTimeoutMs` without a byte either way, and a kept-alive
 *   one 5 s after its last response;
 * - the server checks its sockets against these every second (Node's default is 30 s, which let a
 *   slow body live up to twice as long).
 * A refused request (401, 403, 429) is answered with `Connection: close` (server.ts), so an
 * unauthenticated client cannot keep the socket by sending its body slowly.
 */
export interface ServerLimits {
  requestTimeoutMs: number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const HEADERS_TIMEOUT_MS = 10_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
const CHECK_EVERY_MS = 1_000;

/** A `serverFactory` for Fastify: a plain HTTP server with the limits above. */
export function limitedServer(limits: ServerLimits) {
  return (handler: (req: IncomingMessage, res: ServerResponse) => void): Server => {
    const server = createServer(
      {
        requestTimeout: limits.requestTimeoutMs,
        headersTimeout: Math.min(HEADERS_TIMEOUT_MS, limits.requestTimeoutMs),
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        connectionsCheckingInterval: Math.min(CHECK_EVERY_MS, limits.requestTimeoutMs),
      },
      handler,
    );
    server.setTimeout(limits.requestTimeoutMs, (socket) => socket.destroy());
    return server;
  };
}
