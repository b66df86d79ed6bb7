import { openStore } from '../src/index.js';
import { testPrefix } from './harness/backends.js';
import { describeScheduler } from './harness/scheduler-suite.js';

// Every node opens `memory:NAME`: one shared space, as one process's nodes would share it.
const space = `memory:${testPrefix('sched')}`;
describeScheduler('memory', () => openStore(space), { validation: true });
