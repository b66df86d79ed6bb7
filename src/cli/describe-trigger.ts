/** A job's trigger as one short human string: `cron '0 3 * * *' Europe/Berlin`, `every 1s`, `at …`, `manual`. */
import type { Trigger } from '../schedule/trigger.js';

export function describeTrigger(trigger: Trigger | null): string {
  if (trigger === null) return 'manual';
  if ('cron' in trigger) return `cron '${trigger.cron}' ${trigger.timezone ?? 'UTC'}`;
  if ('every' in trigger)
    return `every ${typeof trigger.every === 'number' ? `${trigger.every}ms` : trigger.every}`;
  const at = trigger.at;
  const ms = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : at;
  return `at ${Number.isFinite(ms) ? new Date(ms).toISOString() : String(at)}`;
}
