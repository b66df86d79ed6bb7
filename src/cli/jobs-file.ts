/**
 * The jobs file of `oncely run`: YAML (or JSON, for files ending in `.json`) with one top-level
 * `jobs:` list. The whole file is validated before anything starts, and every problem is reported
 * in one go, one line each, naming the file, the job (1-based position and name) and the field:
 *
 *   jobs.yaml: job 2 ("backup"): field "overlap" must be one of 'skip', 'queue', 'queue-all', 'replace', 'allow'; got "sometimes"
 *
 * Scheduling options are checked by the scheduler's own `jobSpec` (the same code `define` runs),
 * never re-implemented here; this file adds only what the CLI itself owns: `name`, `command`,
 * `env`, `cwd`, unknown fields and duplicate names.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { OncelyError } from '../core/errors.js';
import { didYouMean } from '../core/options.js';
import { type JobOptions, jobSpec, validateJobName } from '../scheduler/job-options.js';
import { UsageError } from './exit.js';

/** One validated job of the file. */
export interface CliJob {
  /** 1-based position in the `jobs:` list (for messages). */
  index: number;
  name: string;
  /** What goes to `scheduler.define` (only the fields that were given). */
  options: JobOptions;
  /** Run with `/bin/sh -c`. */
  command: string;
  /** Added to the environment of each run (after the inherited one, before the per-run ONCELY_*: job-env.ts). */
  env: Record<string, string>;
  /** Absolute working directory of each run; `undefined`: the directory `oncely run` was started in. */
  cwd: string | undefined;
}

export interface JobsFile {
  path: string;
  jobs: CliJob[];
}

const TOP_LEVEL = ['jobs'] as const;

/** Fields handed to `jobSpec` unchanged (DESIGN.md's list, plus retryDelay, misfireThreshold, recover). */
const SCHEDULING_FIELDS = [
  'cron',
  'every',
  'at',
  'timezone',
  'startAt',
  'endAt',
  'exclude',
  'timeout',
  'overlap',
  'misfire',
  'catchUpLimit',
  'misfireThreshold',
  'retries',
  'retryDelay',
  'recover',
  'lockAtMostFor',
  'lockAtLeastFor',
  'shards',
  'maxConcurrency',
  'rateLimit',
] as const satisfies readonly (keyof JobOptions)[];

const JOB_FIELDS: readonly string[] = ['name', ...SCHEDULING_FIELDS, 'command', 'env', 'cwd'];

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Reads, parses and validates a jobs file. Throws `UsageError` (exit 2) listing every problem. */
export function loadJobsFile(path: string): JobsFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      `${path}: cannot read the jobs file${code === 'ENOENT' ? ': no such file' : `: ${(err as Error).message}`}`,
    );
  }
  return parseJobsFile(text, path);
}

/** Parses and validates the text of a jobs file; `path` names it in messages and anchors relative `cwd`s. */
export function parseJobsFile(text: string, path: string): JobsFile {
  const data = path.toLowerCase().endsWith('.json') ? parseJson(text, path) : parseYaml(text, path);
  const problems: string[] = [];
  if (data === null || data === undefined || typeof data !== 'object' || Array.isArray(data)) {
    throw new UsageError(`${path}: expected a mapping with a top-level "jobs:" list; got ${kindOf(data)}`);
  }
  for (const key of Object.keys(data)) {
    if (!(TOP_LEVEL as readonly string[]).includes(key))
      problems.push(
        `${path}: unknown top-level field ${JSON.stringify(key)}${didYouMean(key, TOP_LEVEL)}; allowed: ${TOP_LEVEL.join(', ')}`,
      );
  }
  const list = (data as { jobs?: unknown }).jobs;
  if (list === undefined) {
    problems.push(`${path}: missing the top-level "jobs:" list`);
  } else if (!Array.isArray(list)) {
    problems.push(`${path}: "jobs" must be a list of jobs; got ${kindOf(list)}`);
  } else if (list.length === 0) {
    problems.push(`${path}: "jobs" is empty; define at least one job`);
  }
  const jobs: CliJob[] = [];
  if (Array.isArray(list)) {
    const seen = new Map<string, number>();
    list.forEach((entry, i) => {
      const { name, job } = validateJob(entry, i + 1, path, problems);
      // Also for a job with other problems: a duplicate is reported in the same pass.
      if (name === undefined) return;
      const first = seen.get(name);
      if (first !== undefined) {
        problems.push(
          `${path}: job ${i + 1} (${JSON.stringify(name)}): field "name" duplicates job ${first}; job names must be unique`,
        );
        return;
      }
      seen.set(name, i + 1);
      if (job) jobs.push(job);
    });
  }
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  return { path, jobs };
}

function parseYaml(text: string, path: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const [first] = doc.errors;
  if (first) {
    const pos = first.linePos?.[0];
    const where = pos ? `${path}:${pos.line}:${pos.col}` : path;
    const message = (first.message.split('\n')[0] ?? '')
      .replace(/ at line \d+, column \d+:?$/, '')
      // The parser's advice is for programmers; a jobs file is one document.
      .replace(
        /; please use YAML\.parseAllDocuments\(\)$/,
        '; a jobs file is one document (remove the "---" line)',
      );
    // `cron: * * * * *` is the classic: an unquoted `*` starts a YAML alias.
    const hint = /alias/i.test(message) ? ` (quote values that start with '*', e.g. cron: '* * * * *')` : '';
    throw new UsageError(`${where}: YAML syntax error: ${message}${hint}`);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // Aliases that expand past the cap (a "billion laughs" file): a bad file, not a crash.
    throw new UsageError(
      `${path}: YAML error: ${(err as Error).message}; a jobs file needs no more than a few aliases (*name)`,
    );
  }
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    const position = /at position (\d+)/.exec(message)?.[1];
    let where = path;
    if (position !== undefined) {
      const before = text.slice(0, Number(position)).split('\n');
      where = `${path}:${before.length}:${(before.at(-1)?.length ?? 0) + 1}`;
    }
    throw new UsageError(
      `${where}: JSON syntax error: ${message.replace(/ in JSON at position \d+.*$/, '')}`,
    );
  }
}

/**
 * Validates one entry, pushing every problem it has; returns its name when that is valid, and the
 * job only when it has no problem.
 */
function validateJob(
  entry: unknown,
  index: number,
  path: string,
  problems: string[],
): { name?: string; job?: CliJob } {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    problems.push(
      `${path}: job ${index}: must be a mapping with name, a trigger and command; got ${kindOf(entry)}`,
    );
    return {};
  }
  const raw = entry as Record<string, unknown>;
  const before = problems.length;
  let name: string | undefined;
  if (raw.name === undefined) {
    problems.push(`${path}: job ${index}: field "name" is required (a non-empty string)`);
  } else {
    try {
      name = validateJobName(raw.name);
    } catch (err) {
      problems.push(`${path}: job ${index}: field "name": ${(err as Error).message}`);
    }
  }
  const at = name === undefined ? `${path}: job ${index}` : `${path}: job ${index} (${JSON.stringify(name)})`;
  const problem = (text: string) => problems.push(`${at}: ${text}`);

  for (const key of Object.keys(raw)) {
    if (!JOB_FIELDS.includes(key))
      problem(
        `unknown field ${JSON.stringify(key)}${didYouMean(key, JOB_FIELDS)}; allowed: ${JOB_FIELDS.join(', ')}`,
      );
  }

  const command = raw.command;
  if (command === undefined) problem('field "command" is required: the shell command to run');
  else if (typeof command !== 'string' || command.trim() === '')
    problem(`field "command" must be a non-empty string; got ${kindOf(command)}`);

  const env = envOf(raw.env, problem);
  const cwd = cwdOf(raw.cwd, path, problem);

  const options: Record<string, unknown> = {};
  for (const field of SCHEDULING_FIELDS) if (raw[field] !== undefined) options[field] = raw[field];
  // A job whose name is bad still has its options checked, under a stand-in name.
  for (const message of optionProblems(name ?? `job ${index}`, options)) problem(message);
  if (problems.length > before || name === undefined || typeof command !== 'string')
    return name === undefined ? {} : { name };
  return { name, job: { index, name, options: options as JobOptions, command, env, cwd } };
}

/**
 * Fields that `jobSpec` checks together: the trigger, and the two lease lengths (one is compared
 * with the other). Every other scheduling field is checked on its own.
 */
const FIELD_GROUPS: readonly (readonly (typeof SCHEDULING_FIELDS)[number][])[] = [
  // startAt/endAt bound the trigger: checked with it (and each other).
  ['cron', 'every', 'at', 'timezone', 'startAt', 'endAt', 'exclude'],
  ['lockAtMostFor', 'lockAtLeastFor'],
  ...SCHEDULING_FIELDS.filter(
    (f) =>
      ![
        'cron',
        'every',
        'at',
        'timezone',
        'startAt',
        'endAt',
        'exclude',
        'lockAtMostFor',
        'lockAtLeastFor',
      ].includes(f),
  ).map((f) => [f]),
];

/**
 * Every problem of a job's scheduling options, not only the first: `jobSpec` stops at the first
 * bad field, so each group of fields is checked on its own (one problem per group at most), and
 * the whole set once more when every group passed (for any rule across groups).
 */
function optionProblems(name: string, options: Record<string, unknown>): string[] {
  const messages: string[] = [];
  const check = (subset: Record<string, unknown>): boolean => {
    try {
      jobSpec(name, subset as JobOptions);
      return true;
    } catch (err) {
      if (!(err instanceof OncelyError) || err.code !== 'INVALID_ARGUMENT') throw err;
      messages.push(fieldMessage(err.message, name));
      return false;
    }
  };
  for (const group of FIELD_GROUPS) {
    const subset = Object.fromEntries(group.filter((f) => f in options).map((f) => [f, options[f]]));
    if (Object.keys(subset).length > 0) check(subset);
  }
  if (messages.length === 0) check(options);
  return messages;
}

/**
 * `jobSpec` says `job "backup": overlap must be …`; in a file the job is already named by the
 * prefix, and the field reads better quoted: `field "overlap" must be …`.
 */
function fieldMessage(message: string, name: string): string {
  const prefix = `job ${JSON.stringify(name)}: `;
  const rest = message.startsWith(prefix) ? message.slice(prefix.length) : message;
  const field = SCHEDULING_FIELDS.find((f) => rest.startsWith(`${f} `) || rest.startsWith(`${f}:`));
  if (field === undefined) return rest;
  const after = rest.slice(field.length);
  // `cron "61 * * * *" is invalid` reads as `field "cron": "61 * * * *" is invalid`.
  return `field "${field}"${after.startsWith(' "') ? `:${after}` : after}`;
}

function envOf(value: unknown, problem: (text: string) => void): Record<string, string> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    problem(`field "env" must be a mapping of NAME: "value" (strings); got ${kindOf(value)}`);
    return {};
  }
  const env: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === '' || key.includes('=') || /\p{Cc}/u.test(key)) {
      problem(`field "env": ${JSON.stringify(key)} is not a valid variable name`);
    } else if (typeof v !== 'string') {
      problem(`field "env": ${key} must be a string (quote it in YAML); got ${kindOf(v)}`);
    } else if (v.includes('\u0000')) {
      problem(`field "env": ${key} must not contain NUL characters`);
    } else {
      env[key] = v;
    }
  }
  return env;
}

/** A relative `cwd` is relative to the jobs file's directory, so the file can travel with its scripts. */
function cwdOf(value: unknown, path: string, problem: (text: string) => void): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    problem(`field "cwd" must be a directory path (a non-empty string); got ${kindOf(value)}`);
    return undefined;
  }
  const dir = resolve(dirname(resolve(path)), value);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // Reported below.
  }
  if (!isDir)
    problem(`field "cwd": ${JSON.stringify(value)} is not an existing directory (resolved to ${dir})`);
  return dir;
}
