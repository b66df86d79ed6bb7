import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeScheduler } from './harness/scheduler-suite.js';

const target = serverBackend('postgres');
const prefix = testPrefix('schedpg');

describeScheduler('postgres', () => openStore(target.url!, { prefix }), {
  skip: target.skip,
  processStore: () => ({ url: target.url!, prefix }),
});
