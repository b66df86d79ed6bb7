export { type FireTimesOptions, fireTimes, nextFireTimes } from './fire-times.js';
export { latestFireTime } from './latest-fire-time.js';
export { type CompiledTrigger, compileTrigger, type Trigger, validateTimezone } from './trigger.js';
