import type { LeaseRequest } from '../../types.js';
import { MAX_BATCH } from '../../validate.js';
import type { GrantedRow } from '../dialect.js';
import type { Tables } from '../tables.js';
import { MYSQL_NOW, MYSQL_SCRIPT_NOW, MYSQL_SET_SCRIPT_NOW } from './clock.js';
import type { MysqlHeader, ScriptPart } from './driver.js';

/**
 * Tokens are `fence id * FENCE_SLOTS + slot`: a script grant takes slot = its index in the batch (a
 * batch has at most MAX_BATCH, 1000, keys); a re-grant (regrant.ts) moves a key to the next
 * slot of the same block, up to the last one.
 */
export const FENCE_SLOTS = 1024;
if (MAX_BATCH > FENCE_SLOTS) throw new Error('MAX_BATCH must fit in the fence slots');

/**
 * acquire (MySQL 8 / MariaDB 10.6+): a short script in one transaction, sent as one
 * multi-statement query (one round trip, one commit) with its values inlined as sql_mode-proof
 * literals (runScript, literal.ts). "Lock the rows, then draw the token." A single key first tries
 * the one-statement re-grant (regrant.ts) and comes here only when that cannot decide.
 *
 * Takes: keys, owners, lease lengths, sorted by key (rows are locked in one order by everyone).
 * Returns: one row (key, token, acquired_at, expires_at) per granted key.
 *
 * 1. One `INSERT … ON DUPLICATE KEY UPDATE` for all keys: inserts new keys (their `sweep_at` is
 *    their lease's end; a granted existing row keeps its own, see schema.ts), and takes an existing
 *    row only if its lease has expired on one clock instant (a single key: the statement's; a
 *    batch: the script's, read by its first statement — clock.ts MYSQL_SCRIPT_NOW). Either way it
 *    leaves every key's row X-locked until COMMIT. A granted row gets a marker token no committed lease
 *    ever has: −(index + 1) in a batch (tokens are never negative), 0 for a single key (the only
 *    committed rows with token 0 are the re-grant's placeholders, expired since the epoch, which
 *    this step always takes). (Assignments run left to right and later ones see earlier new
 *    values, so `token` is decided first and the other columns follow the marker.)
 * 2. `INSERT INTO <prefix>fence () VALUES ()` draws a fresh AUTO_INCREMENT id F (store-wide,
 *    increasing, allocated without a row lock: MySQL 8 has no sequence, and a one-row counter
 *    would serialise every acquire). LAST_INSERT_ID() is F from then on.
 * 3. `UPDATE … SET token = F * 1024 + index` on our marked keys: the tokens (index read back
 *    from the marker; a `FIELD(key, …)` lookup instead costs a scan of the key list per row:
 *    ~5 ms more for 666 keys on MariaDB).
 *
 * Drawing F only while holding the rows is what makes tokens grow per key even across sweep: every
 * token written to a key before was drawn before its writer committed, and every deleted row was
 * deleted before we could lock or insert the key. (Drawing first and writing later would let a
 * slow script write a smaller token than a faster one whose tiny lease was already swept.)
 *
 * A batch ends with `SELECT … WHERE key IN (…) AND token in [F*1024, F*1024+1023]`: exactly our
 * grants — on MySQL 8; on MariaDB the upsert's own `RETURNING` names them instead (the rows it
 * marked; their tokens are F*1024 + index by the UPDATE's rule, see mysqlGranted), one statement
 * less (1,000 keys: ~38 → ~30 ms on MariaDB 10.11 here). A single key (the tryLock hot path) skips
 * that SELECT: its VALUES row sets `LAST_INSERT_ID(now)` and the not-granted branch of the `token`
 * assignment (IF evaluates only the branch it takes) resets it with `LAST_INSERT_ID(0)`; the server
 * reports LAST_INSERT_ID(expr) in the statement's OK packet, so the upsert's insertId is
 * acquired_at when granted and 0 when held, the fence insert's insertId is F, and expires_at =
 * acquired_at + leaseMs is exactly what the row holds. Without multipleStatements the same statements go one by one on one connection, still
 * inside START TRANSACTION … COMMIT (the token-0 marker must never be committed).
 */
export function mysqlAcquireScript(
  t: Tables,
  requests: readonly LeaseRequest[],
  options: { returning: boolean } = { returning: false },
): ScriptPart[] {
  const fence: ScriptPart = { sql: `INSERT INTO ${t.fence} () VALUES ()`, values: [] };
  const [only] = requests;
  if (requests.length === 1 && only) {
    const row = `(?, ?, 0, LAST_INSERT_ID(${MYSQL_NOW}), ${MYSQL_NOW} + CAST(? AS SIGNED), ${MYSQL_NOW} + CAST(? AS SIGNED))`;
    return [
      {
        sql: mysqlLeaseUpsert(t, row, 'token + 0 * LAST_INSERT_ID(0)'),
        values: [only.key, only.owner, only.leaseMs, only.leaseMs],
      },
      fence,
      {
        sql: `UPDATE ${t.leases} SET token = LAST_INSERT_ID() * ${FENCE_SLOTS} WHERE \`key\` = ? AND token = 0`,
        values: [only.key],
      },
    ];
  }
  const keys = requests.map((r) => r.key);
  const marks = keys.map(() => '?').join(', ');
  const values: (string | number)[] = [];
  requests.forEach((r, i) => {
    values.push(r.key, r.owner, -(i + 1), r.leaseMs, r.leaseMs);
  });
  // Values are inlined literals (integers already), so no CAST; the clock is the script's.
  const row = `(?, ?, ?, ${MYSQL_SCRIPT_NOW}, ${MYSQL_SCRIPT_NOW} + ?, ${MYSQL_SCRIPT_NOW} + ?)`;
  const marked = mysqlLeaseUpsert(
    t,
    requests.map(() => row).join(', '),
    'token',
    'VALUES(token)',
    'token < 0',
  );
  const parts: ScriptPart[] = [
    { sql: MYSQL_SET_SCRIPT_NOW, values: [] },
    // MariaDB: the upsert returns every row as it left it (granted ones with their marker), so the
    // grants are known without the final SELECT (see mysqlGranted).
    { sql: options.returning ? `${marked} ${RETURNING}` : marked, values },
    fence,
    {
      sql:
        `UPDATE ${t.leases} SET token = LAST_INSERT_ID() * ${FENCE_SLOTS} - token - 1 ` +
        `WHERE \`key\` IN (${marks}) AND token < 0`,
      values: keys,
    },
  ];
  if (options.returning) return parts;
  return [
    ...parts,
    {
      sql:
        `SELECT \`key\`, token, acquired_at, expires_at FROM ${t.leases} WHERE \`key\` IN (${marks}) ` +
        `AND token BETWEEN LAST_INSERT_ID() * ${FENCE_SLOTS} AND LAST_INSERT_ID() * ${FENCE_SLOTS} + ${FENCE_SLOTS - 1}`,
      values: keys,
    },
  ];
}

/**
 * The upsert of step 1: a row whose lease has expired takes the `mark` token (`granted` tells a
 * marked row), one whose lease still runs keeps `keepToken`. claim-page.ts takes a page's lease
 * with it too.
 */
export function mysqlLeaseUpsert(
  t: Tables,
  rows: string,
  keepToken: string,
  mark = '0',
  granted = 'token = 0',
): string {
  return (
    `INSERT INTO ${t.leases} (\`key\`, owner, token, acquired_at, expires_at, sweep_at) VALUES ${rows} ` +
    'ON DUPLICATE KEY UPDATE ' +
    `token = IF(expires_at <= VALUES(acquired_at), ${mark}, ${keepToken}), ` +
    `owner = IF(${granted}, VALUES(owner), owner), ` +
    `acquired_at = IF(${granted}, VALUES(acquired_at), acquired_at), ` +
    `expires_at = IF(${granted}, VALUES(expires_at), expires_at)`
  );
}

/** What the batch upsert returns on MariaDB (see {@link mysqlGranted}). */
const RETURNING = 'RETURNING `key`, token, acquired_at, expires_at';

/**
 * The granted rows, from the results of {@link mysqlAcquireScript} (with the same `returning`).
 * With RETURNING, a batch's grants are the upsert's rows that carry a marker (token < 0: granted
 * by this statement, as the UPDATE's `token < 0` selects them) — their token is the one the UPDATE
 * then wrote, fence id × 1024 + index, the fence id being the fence insert's id; acquired_at and
 * expires_at are as the upsert left them (the UPDATE changes only the token). A row still held
 * keeps its positive token and is not a grant.
 */
export function mysqlGranted(
  requests: readonly LeaseRequest[],
  results: readonly unknown[],
  options: { returning: boolean } = { returning: false },
): GrantedRow[] {
  const [only] = requests;
  if (requests.length === 1 && only) {
    const acquiredAt = Number((results[0] as MysqlHeader).insertId);
    if (!(acquiredAt > 0)) return [];
    const fence = Number((results[1] as MysqlHeader).insertId);
    return [
      {
        key: only.key,
        token: fence * FENCE_SLOTS,
        acquired_at: acquiredAt,
        expires_at: acquiredAt + only.leaseMs,
      },
    ];
  }
  if (!options.returning) return (results.at(-1) ?? []) as GrantedRow[];
  // [SET, upsert … RETURNING, fence insert, UPDATE]
  const rows = (results[1] ?? []) as GrantedRow[];
  const fence = Number((results[2] as MysqlHeader).insertId);
  const granted: GrantedRow[] = [];
  for (const row of rows) {
    const marker = Number(row.token);
    if (marker < 0) granted.push({ ...row, token: fence * FENCE_SLOTS - marker - 1 });
  }
  return granted;
}
