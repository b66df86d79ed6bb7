import { MemoryStore, openStore } from '../src/index.js';
import { describeStore } from '../src/testing/index.js';

describeStore('memory', async () => new MemoryStore({ space: 'conformance' }));
describeStore('memory via openStore', async () => openStore('memory:conformance-url'));
