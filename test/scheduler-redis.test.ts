import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeScheduler } from './harness/scheduler-suite.js';

const target = serverBackend('redis');
const prefix = testPrefix('schedredis');

describeScheduler('redis', () => openStore(target.url!, { prefix }), {
  skip: target.skip,
});
