import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeScheduler } from './harness/scheduler-suite.js';

const target = serverBackend('etcd');
const prefix = testPrefix('schedetcd');

describeScheduler('etcd', () => openStore(target.url!, { prefix }), {
  skip: target.skip,
});
