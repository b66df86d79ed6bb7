/**
 * A TCP proxy that injects network faults between a client and a store server, for tests.
 *
 *   const proxy = await startFaultProxy(serverUrl);     // listens on a free 127.0.0.1 port
 *   const store = await openStore(proxy.url);           // the same URL, host:port rewritten
 *   proxy.dropReplies(true);                            // "committed, but the reply was lost"
 *
 * Faults, each for the whole proxy or for one connection (`proxy.live()[i]`); a connection's own
 * setting, once given, wins over the proxy's:
 * - `delay(ms)`: every chunk is forwarded `ms` after it arrived, in both directions (a round trip
 *   gains at least 2 × ms); order is kept.
 * - `dropReplies(on)`: server → client bytes that arrive while on are discarded; the connection
 *   stays open, and client → server bytes still flow (the server acts, the client never hears).
 * - `stall(on)`: nothing is forwarded either way and both sockets stay open (a hung peer or a
 *   half-open connection); what arrived meanwhile is delivered, in order, on `stall(false)`.
 * - `reset()` / `resetAll()`: destroys both sides with a TCP RST (`resetAndDestroy`).
 * - `refuse(on)` (proxy only): new connections get an RST at once, the server never sees them.
 * - `onRequest(listener)` (proxy only): each client → server chunk is shown to `listener` as it
 *   arrives, before any delay (a test acts the instant a client sent a given request).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface FaultControls {
  delay(ms: number): void;
  dropReplies(on: boolean): void;
  stall(on: boolean): void;
}

/** One proxied connection: client socket ⇄ server socket. */
export interface ProxyConnection extends FaultControls {
  /** 1, 2, … in the order clients connected to the proxy. */
  readonly id: number;
  reset(): void;
}

export interface FaultProxy extends FaultControls {
  readonly port: number;
  /** The target URL with its host:port replaced by the proxy's (user, password, path kept). */
  readonly url: string;
  refuse(on: boolean): void;
  /** Shows each client → server chunk to `listener` as it arrives (`undefined`: no longer). */
  onRequest(listener: ((chunk: Buffer) => void) | undefined): void;
  /** RST on every open connection (both sides). */
  resetAll(): void;
  /** How many proxied connections are open now. */
  connections(): number;
  /** The open connections, oldest first, each with its own controls. */
  live(): ProxyConnection[];
  /** Resolves once `connections()` is `count` (polls; rejects after `timeoutMs`). */
  waitForConnections(count: number, timeoutMs?: number): Promise<void>;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
}

interface Settings {
  delayMs?: number;
  drop?: boolean;
  stalled?: boolean;
}

type Item = { chunk: Buffer; dueAt: number } | { end: true; dueAt: number };

/**
 * One direction of a connection. Invariant: bytes leave in the order they arrived, none before
 * its due time, none while stalled; `end` (the peer's FIN) is forwarded after every byte before it.
 */
class Pipe {
  private readonly queue: Item[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly settings: () => Required<Settings>,
    private readonly replies: boolean,
    tap?: (chunk: Buffer) => void,
  ) {
    from.on('data', (chunk: Buffer) => {
      tap?.(chunk);
      const s = this.settings();
      if (this.replies && s.drop) return;
      this.queue.push({ chunk, dueAt: performance.now() + s.delayMs });
      this.pump();
    });
    from.on('end', () => {
      this.queue.push({ end: true, dueAt: performance.now() + this.settings().delayMs });
      this.pump();
    });
  }

  /** Forwards every due item; re-arms a timer for the next one. Called on every change. */
  pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const { stalled } = this.settings();
    // A stalled pipe stops reading too, so the peer's kernel buffers fill as on a hung link.
    if (stalled) {
      this.from.pause();
      return;
    }
    this.from.resume();
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      const wait = head.dueAt - performance.now();
      if (wait > 0) {
        this.timer = setTimeout(() => this.pump(), Math.ceil(wait));
        return;
      }
      this.queue.shift();
      if (this.to.destroyed || this.to.writableEnded) continue;
      if ('end' in head) this.to.end();
      else this.to.write(head.chunk);
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

class Connection implements ProxyConnection {
  private readonly own: Settings = {};
  private readonly pipes: Pipe[];

  constructor(
    readonly id: number,
    readonly client: Socket,
    readonly server: Socket,
    proxySettings: Required<Settings>,
    onClose: () => void,
    tap: (chunk: Buffer) => void,
  ) {
    const settings = (): Required<Settings> => ({
      delayMs: this.own.delayMs ?? proxySettings.delayMs,
      drop: this.own.drop ?? proxySettings.drop,
      stalled: this.own.stalled ?? proxySettings.stalled,
    });
    this.pipes = [new Pipe(client, server, settings, false, tap), new Pipe(server, client, settings, true)];
    let closed = false;
    const close = (peer: Socket, hadError: boolean) => {
      // An RST (or a failed connect) on one side is passed on as an RST; a clean close needs
      // nothing here: its FIN travels through the pipe, behind the bytes sent before it.
      if (hadError) peer.resetAndDestroy();
      if (!closed && client.destroyed && server.destroyed) {
        closed = true;
        for (const pipe of this.pipes) pipe.stop();
        onClose();
      }
    };
    client.on('error', () => {});
    server.on('error', () => {});
    client.on('close', (hadError) => close(server, hadError));
    server.on('close', (hadError) => close(client, hadError));
  }

  delay(ms: number): void {
    this.own.delayMs = ms;
    this.refresh();
  }
  dropReplies(on: boolean): void {
    this.own.drop = on;
  }
  stall(on: boolean): void {
    this.own.stalled = on;
    this.refresh();
  }
  reset(): void {
    this.client.resetAndDestroy();
    this.server.resetAndDestroy();
  }
  refresh(): void {
    for (const pipe of this.pipes) pipe.pump();
  }
}

/** Starts a proxy to `target` (a URL whose host:port it forwards to, or `{ host, port }`). */
export async function startFaultProxy(target: string | { host: string; port: number }): Promise<FaultProxy> {
  const parsed = typeof target === 'string' ? new URL(target) : undefined;
  const host = parsed ? parsed.hostname.replace(/^\[(.*)\]$/, '$1') : (target as { host: string }).host;
  const port = parsed ? Number(parsed.port) : (target as { port: number }).port;
  if (!Number.isInteger(port) || port <= 0) throw new Error(`fault proxy: no port in ${String(target)}`);
  const settings: Required<Settings> = { delayMs: 0, drop: false, stalled: false };
  const open = new Set<Connection>();
  let refusing = false;
  let requestListener: ((chunk: Buffer) => void) | undefined;
  const tap = (chunk: Buffer) => requestListener?.(chunk);
  let nextId = 1;

  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    if (refusing) {
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    const upstream = connect({ host, port, allowHalfOpen: true });
    upstream.pause();
    const connection = new Connection(
      nextId++,
      client,
      upstream,
      settings,
      () => open.delete(connection),
      tap,
    );
    open.add(connection);
    connection.refresh();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const proxyPort = typeof address === 'object' && address ? address.port : 0;
  let url = `tcp://127.0.0.1:${proxyPort}`;
  if (parsed) {
    const rewritten = new URL(parsed.href);
    rewritten.hostname = '127.0.0.1';
    rewritten.port = String(proxyPort);
    url = rewritten.href;
  }
  const refreshAll = () => {
    for (const c of open) c.refresh();
  };

  return {
    port: proxyPort,
    url,
    delay(ms) {
      settings.delayMs = ms;
      refreshAll();
    },
    dropReplies(on) {
      settings.drop = on;
    },
    stall(on) {
      settings.stalled = on;
      refreshAll();
    },
    refuse(on) {
      refusing = on;
    },
    onRequest(listener) {
      requestListener = listener;
    },
    resetAll() {
      for (const c of open) c.reset();
    },
    connections: () => open.size,
    live: () => [...open],
    async waitForConnections(count, timeoutMs = 10_000) {
      const deadline = performance.now() + timeoutMs;
      while (open.size !== count) {
        if (performance.now() > deadline)
          throw new Error(`fault proxy: ${open.size} connections open, expected ${count}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const c of open) c.reset();
      await closed;
    },
  };
}
