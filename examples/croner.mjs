// An existing croner job, made to run once per fire time across every replica of a service.
// Start it on every replica (or several times on one host) against the same store:
//
//   npm run build                                # once, in a checkout: `oncely` resolves to dist/
//   node examples/croner.mjs & node examples/croner.mjs & node examples/croner.mjs
//   ONCELY_STORE=postgres://user:pass@db:5432/app node examples/croner.mjs
//
// Every 5 s exactly one of them prints "runs"; the others print nothing for that fire time.
// Ctrl-C (SIGINT) or SIGTERM stops the job, waits for a run in progress and closes the store.
import { setTimeout } from 'node:timers/promises';
import { Cron } from 'croner';
import { once, openStore } from 'oncely';

const store = await openStore(process.env.ONCELY_STORE ?? 'sqlite:./oncely.db');

const report = once(
  store,
  // The name must be the same on every replica; the schedule comes from the croner job itself.
  {
    name: 'five-second-report',
    onError: (error, { during }) => console.error(`report ${during} failed:`, error),
  },
  async ({ fireTime, token, signal }) => {
    console.log(`pid ${process.pid} runs the report of ${fireTime.toISOString()} (fencing token ${token})`);
    await setTimeout(200, undefined, { signal }); // the work: stop if the claim cannot be kept
  },
);

// protect: a tick is skipped while this replica's previous one is still running.
const job = new Cron('*/5 * * * * *', { protect: true }, report);

async function shutdown() {
  job.stop();
  while (job.isBusy()) await setTimeout(50);
  await store.close();
  process.exit(0);
}
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
console.log(`pid ${process.pid} scheduled; next fire time ${job.nextRun()?.toISOString()}`);
