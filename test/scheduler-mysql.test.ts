import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeScheduler } from './harness/scheduler-suite.js';

const target = serverBackend('mysql');
const prefix = testPrefix('schedmysql');

describeScheduler('mysql', () => openStore(target.url!, { prefix }), {
  skip: target.skip,
});
