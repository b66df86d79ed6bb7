import { invalidArgument } from '../core/errors.js';
import { compileTrigger, type Trigger } from '../schedule/trigger.js';
import { validateJobName } from './job-options.js';
import { esc, keys } from './keys.js';
import type { NodeState } from './node-state.js';
import type { StoredSchedule } from './types.js';

/** `scheduler.schedules`: stored per-user/per-tenant schedules of defined jobs. */
export interface Schedules {
  upsert: (schedule: StoredSchedule) => Promise<void>;
  remove: (id: string, job?: string) => Promise<boolean>;
  get: (id: string) => Promise<StoredSchedule | undefined>;
  list: (filter?: { job?: string }) => Promise<StoredSchedule[]>;
}

/** The stored-schedules API of one node: writes go to the store, and this node's next poll comes at once. */
export function createSchedules(state: NodeState): Schedules {
  const schedules = {
    upsert: async (schedule: StoredSchedule): Promise<void> => {
      const { id, job, data: _data, ...trigger } = schedule;
      // Ids and job names are parts of occurrence keys: 200 characters each as stored (keys.ts).
      if (typeof id !== 'string' || id === '' || esc(id).length > 200 || /\p{Cc}/u.test(id))
        throw invalidArgument("schedule id must be 1-200 printable characters ('|' and '%' count 3)");
      validateJobName(job);
      compileTrigger(trigger as Trigger, `schedule ${JSON.stringify(id)}`);
      await state.store.put(keys.schedule(job, id), JSON.stringify(schedule));
      state.nextPollAt = 0;
      state.poke();
    },
    remove: async (id: string, job?: string): Promise<boolean> => {
      const found = job === undefined ? (await schedules.list()).find((s) => s.id === id) : { job };
      if (!found) return false;
      return state.store.delete(keys.schedule(found.job, id));
    },
    get: async (id: string): Promise<StoredSchedule | undefined> =>
      (await schedules.list()).find((s) => s.id === id),
    list: async (filter: { job?: string } = {}): Promise<StoredSchedule[]> => {
      const records = await state.store.scan(keys.schedulePrefix(filter.job), { limit: 10_000 });
      return records.map((r) => JSON.parse(r.value) as StoredSchedule);
    },
  };
  return schedules;
}
