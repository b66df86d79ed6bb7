export { type FireTimesOptions, fireTimes, nextFireTimes } from './fire-times.js';
export { type CompiledTrigger, compileTrigger, type Trigger, validateTimezone } from './trigger.js';
