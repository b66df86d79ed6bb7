import { openStore } from '../src/index.js';
import { describeAudit } from './harness/audit-suite.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeJitter } from './harness/jitter-suite.js';
import { describeNext } from './harness/next-suite.js';
import { describeScheduler } from './harness/scheduler-suite.js';

const target = serverBackend('mysql');
const prefix = testPrefix('schedmysql');

describeScheduler('mysql', () => openStore(target.url!, { prefix }), {
  skip: target.skip,
});
describeAudit('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeJitter('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
describeNext('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });
