import type { Registry } from 'prom-client';
import { type Clock, systemClock } from '../core/clock.js';
import { parseDuration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import { defaultOwner } from '../core/ids.js';
import { consoleWarnings, type Logger, silentLogger } from '../core/logger.js';
import { unknownOption } from '../core/options.js';
import type { Store } from '../store/types.js';
import { validateActor } from './control/audit.js';
import type { SchedulerOptions, SchedulerTracer } from './types.js';

/** How many schedulers this process created (for distinct default node ids). */
let schedulersCreated = 0;

/** `SchedulerOptions` checked, with defaults filled in and durations in ms. */
export interface ResolvedOptions {
  store: Store;
  node: string;
  concurrency: number;
  logger: Logger;
  clock: Clock;
  /** Injected randomness (see SchedulerOptions.random); undefined = Math.random and crypto ids. */
  random: (() => number) | undefined;
  pollMs: number;
  retentionMs: number;
  /** How long audit trail entries are kept (default retentionMs). */
  auditRetentionMs: number;
  /** Who this node's changes are recorded as (default the node id). */
  actor: string;
  stopTimeoutMs: number;
  sweepMs: number;
  tracer?: SchedulerTracer;
  registry?: Registry;
}

/** Throws `INVALID_ARGUMENT` unless `node` can name a scheduler node (heartbeats, claims, history). */
export function validateNodeName(node: unknown): string {
  if (typeof node !== 'string' || node === '' || node.length > 200 || /\p{Cc}/u.test(node)) {
    throw invalidArgument('node must be 1-200 printable characters');
  }
  return node;
}

/** Validates `createScheduler`'s options (`INVALID_ARGUMENT` naming the field) and fills in defaults. */
export function resolveOptions(options: SchedulerOptions): ResolvedOptions {
  if (!options || typeof options !== 'object' || !options.store) {
    throw invalidArgument('createScheduler needs { store } (see openStore)');
  }
  const known = new Set([
    'store',
    'node',
    'concurrency',
    'logger',
    'pollInterval',
    'historyRetention',
    'auditRetention',
    'actor',
    'stopTimeout',
    'sweepInterval',
    'clock',
    'tracer',
    'registry',
    'random',
  ]);
  for (const field of Object.keys(options)) {
    if (!known.has(field)) throw unknownOption('scheduler', field, [...known]);
  }
  // Node ids must differ between schedulers (heartbeats and claims are keyed by them): the
  // process's owner id for the first one, with `#2`, `#3`… for further ones in the same process.
  schedulersCreated++;
  const node =
    options.node ?? (schedulersCreated === 1 ? defaultOwner() : `${defaultOwner()}#${schedulersCreated}`);
  validateNodeName(node);
  const concurrency = options.concurrency ?? 16;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
    throw invalidArgument(`concurrency must be a whole number from 1 to 10000; got ${options.concurrency}`);
  }
  // Loud by default: a handler that throws, a lost lease or a store outage reaches stderr unless
  // the user routes it elsewhere or asks for silence (`logger: false` or `silentLogger`).
  const logger = options.logger === false ? silentLogger : (options.logger ?? consoleWarnings);
  if (
    typeof logger !== 'object' ||
    logger === null ||
    ['debug', 'info', 'warn', 'error'].some(
      (l) => typeof (logger as unknown as Record<string, unknown>)[l] !== 'function',
    )
  )
    throw invalidArgument(
      'logger must have debug, info, warn and error methods (pino, console, …), or be false for none',
    );
  if (
    options.tracer !== undefined &&
    typeof (options.tracer as { startSpan?: unknown })?.startSpan !== 'function'
  )
    throw invalidArgument(
      'tracer must be an OpenTelemetry Tracer (trace.getTracer(name) or provider.getTracer(name))',
    );
  const registry = options.registry;
  if (
    registry !== undefined &&
    (typeof registry !== 'object' ||
      registry === null ||
      typeof registry.registerMetric !== 'function' ||
      typeof registry.getSingleMetric !== 'function')
  )
    throw invalidArgument(
      "registry must be a prom-client Registry (new Registry() or prom-client's register)",
    );
  if (options.random !== undefined && typeof options.random !== 'function')
    throw invalidArgument('random must be a function returning numbers in [0, 1)');
  const retentionMs = parsePositiveDuration(options.historyRetention ?? '7d', 'historyRetention');
  return {
    store: options.store,
    node,
    actor: options.actor === undefined ? node : validateActor(options.actor, 'createScheduler'),
    auditRetentionMs:
      options.auditRetention === undefined
        ? retentionMs
        : parsePositiveDuration(options.auditRetention, 'auditRetention'),
    concurrency,
    logger,
    clock: options.clock ?? systemClock,
    random: options.random,
    pollMs: parsePositiveDuration(options.pollInterval ?? '1s', 'pollInterval'),
    retentionMs,
    stopTimeoutMs: parseDuration(options.stopTimeout ?? '30s', 'stopTimeout'),
    sweepMs: parsePositiveDuration(options.sweepInterval ?? '1m', 'sweepInterval'),
    ...(options.tracer !== undefined && { tracer: options.tracer }),
    ...(registry !== undefined && { registry }),
  };
}
