#!/usr/bin/env node
// Checks oncely's production dependencies (what `npm install oncely` brings) for known advisories
// through `npm audit --omit=dev`, and says plainly which of three things happened:
//
//   audit: checked N production packages: no advisories at or above <level>      exit 0
//   audit: FOUND k advisories at or above <level>: … (one line each)             exit 1
//   audit: NOT CHECKED: the registry's advisory service did not answer (…)       exit 0 (1 with --strict)
//
// The registry mirror some machines reach answers package downloads but not the advisory endpoint
// (HTTP 405); a run there must not pretend the dependencies were checked, nor fail a build for a
// service outage. `--level low|moderate|high|critical` (default high) sets what fails the run.
import { spawnSync } from 'node:child_process';

const LEVELS = ['info', 'low', 'moderate', 'high', 'critical'];

function parseArgs(argv) {
  const options = { level: 'high', strict: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--strict') options.strict = true;
    else if (arg === '--level' && LEVELS.includes(argv[i + 1])) options.level = argv[++i];
    else {
      console.error(
        `audit: unknown argument ${JSON.stringify(arg)}; use --level ${LEVELS.join('|')} and --strict`,
      );
      process.exit(2);
    }
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
const npm = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', timeout: 120_000 });

let report;
try {
  report = JSON.parse(npm.stdout);
} catch {
  report = undefined;
}

if (!report || !report.metadata || report.error) {
  const why =
    npm.error?.message ??
    report?.message ??
    report?.error?.summary ??
    (npm.stderr.trim().split('\n').at(-1) || `npm audit exited ${npm.status}`);
  console.log(
    `audit: NOT CHECKED: the registry's advisory service did not answer (${why}); ` +
      'production dependencies were not checked for known advisories',
  );
  process.exit(options.strict ? 1 : 0);
}

const threshold = LEVELS.indexOf(options.level);
const counts = report.metadata.vulnerabilities ?? {};
const found = Object.values(report.vulnerabilities ?? {}).filter(
  (v) => LEVELS.indexOf(v.severity) >= threshold,
);
const total = report.metadata.dependencies?.prod ?? report.metadata.dependencies?.total ?? '?';
const summary =
  LEVELS.filter((l) => counts[l])
    .map((l) => `${counts[l]} ${l}`)
    .join(', ') || 'none';

if (found.length === 0) {
  console.log(
    `audit: checked ${total} production packages: no advisories at or above ${options.level} (all: ${summary})`,
  );
  process.exit(0);
}
console.log(`audit: FOUND ${found.length} production packages with advisories at or above ${options.level}:`);
for (const v of found) {
  const titles = (v.via ?? []).map((via) => (typeof via === 'string' ? `via ${via}` : via.title)).join('; ');
  console.log(
    `  ${v.name} (${v.severity}, ${v.range}): ${titles}${v.fixAvailable ? ' [fix available]' : ''}`,
  );
}
process.exit(1);
