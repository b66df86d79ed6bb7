import { EventEmitter } from 'node:events';
import type { Logger } from '../core/logger.js';
import type { SchedulerEvents } from './types.js';

export type Listener<K extends keyof SchedulerEvents> = (payload: SchedulerEvents[K]) => void;

/** The scheduler's typed events. A listener that throws, or an 'error' nobody listens to, never reaches the loop. */
export class SchedulerEmitter {
  private readonly events = new EventEmitter();

  constructor(
    private readonly logger: Logger,
    private readonly node: string,
  ) {}

  on<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): void {
    this.events.on(event, listener as (p: unknown) => void);
  }

  off<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): void {
    this.events.off(event, listener as (p: unknown) => void);
  }

  once<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): void {
    this.events.once(event, listener as (p: unknown) => void);
  }

  emit<K extends keyof SchedulerEvents>(event: K, payload: SchedulerEvents[K]): void {
    if (event === 'error') {
      this.logger.error(
        `oncely scheduler ${this.node}: ${(payload as SchedulerEvents['error']).during} failed`,
        (payload as SchedulerEvents['error']).error,
      );
      // An 'error' event without listeners must not crash the process (EventEmitter would throw).
      if (this.events.listenerCount('error') === 0) return;
    }
    try {
      this.events.emit(event, payload);
    } catch (err) {
      this.logger.error(`oncely scheduler: a '${event}' listener threw`, err);
    }
  }
}
