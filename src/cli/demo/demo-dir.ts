/**
 * The demo's directory: the shared SQLite file, the ledger and one log per node. A directory the
 * caller names is reused, so the files a previous demo left there are removed first; otherwise a
 * new temp dir is made, and the demo removes it when done (`ownDir`).
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Files the demo creates in its directory (removed first when `dir` is given and reused). */
const DB_FILE = 'demo.db';
const LEDGER_FILE = 'ledger.jsonl';

export interface DemoDir {
  dir: string;
  /** A temp dir made for this demo, to be removed afterwards. */
  ownDir: boolean;
  dbPath: string;
  /** Exists (empty) once prepared, so the ledger can be read before any node writes to it. */
  ledgerPath: string;
}

/**
 * Makes or clears the directory for a demo of the nodes `names`.
 *
 * @example
 * const { dbPath, ledgerPath } = prepareDemoDir(undefined, ['node-1', 'node-2']);
 */
export function prepareDemoDir(given: string | undefined, names: readonly string[]): DemoDir {
  const ownDir = given === undefined;
  const dir = given ?? mkdtempSync(join(tmpdir(), 'oncely-demo-'));
  if (!ownDir) {
    mkdirSync(dir, { recursive: true });
    for (const f of [
      DB_FILE,
      `${DB_FILE}-wal`,
      `${DB_FILE}-shm`,
      LEDGER_FILE,
      ...names.map((n) => `${n}.log`),
    ])
      rmSync(join(dir, f), { force: true });
  }
  const dbPath = join(dir, DB_FILE);
  const ledgerPath = join(dir, LEDGER_FILE);
  closeSync(openSync(ledgerPath, 'a'));
  return { dir, ownDir, dbPath, ledgerPath };
}
