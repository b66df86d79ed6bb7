import { EventEmitter } from 'node:events';
import type { Telemetry } from './telemetry.js';
import type { SchedulerEvents } from './types.js';

export type Listener<K extends keyof SchedulerEvents> = (payload: SchedulerEvents[K]) => void;

/** The scheduler's typed events (seen first by its telemetry). A listener that throws, or an 'error' nobody listens to, never reaches the loop. */
export class SchedulerEmitter {
  private readonly events = new EventEmitter();

  constructor(private readonly telemetry: Telemetry) {}

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
    // Metrics and logs first (the error is logged there), whoever listens.
    (this.telemetry.observe as (e: K, p: SchedulerEvents[K]) => void)(event, payload);
    // An 'error' event without listeners must not crash the process (EventEmitter would throw).
    if (event === 'error' && this.events.listenerCount('error') === 0) return;
    try {
      this.events.emit(event, payload);
    } catch (err) {
      this.telemetry.log?.('error', `oncely scheduler: a '${event}' listener threw`, { event }, err);
    }
  }
}
