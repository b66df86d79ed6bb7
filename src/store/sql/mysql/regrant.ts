import type { LeaseRequest } from '../../types.js';
import type { GrantedRow, SqlValue, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { FENCE_SLOTS } from './acquire.js';
import { MYSQL_NOW } from './clock.js';
import type { MysqlHeader } from './driver.js';

/**
 * re-grant (one key: every `tryLock`) — take the key's existing row again with the next token of
 * its fence block, in one prepared `INSERT … ON DUPLICATE KEY UPDATE`: one round trip, one
 * autocommit statement. A key it cannot decide goes on to the acquire script (acquire.ts).
 *
 * Tokens are `fence id F * 1024 + slot` (acquire.ts). A re-grant takes a row whose lease has
 * expired, whose token is real (> 0: not a placeholder, below) and whose block has room (slot <
 * 1023), and gives it token + 1 — the next slot of the same block — with acquired_at = now and
 * expires_at = now + leaseMs.
 *
 * Why tokens still grow per key, also across sweep: the row is X-locked by the ODKU from the
 * moment it is read until commit, so the +1 is decided and written under the row lock, over the
 * largest token the key has had since the row was created (every token write of a key happens
 * under its row lock and increases it). It never leaves the row's block F, and the script only
 * ever writes F' * 1024 + i with a fence id F' drawn after locking the row, so F' > F: a script
 * grant is above every re-grant before it. A swept key comes back only through the script (a
 * re-grant of a missing row inserts a placeholder and answers "script"), whose F' is drawn after
 * the row was deleted and so exceeds every block the key used. Placeholders hold no token:
 * token 0, expired since the epoch — invisible to reads, taken by the next grant, deleted by sweep.
 *
 * Why one holder at a time: the lease is taken only if it has expired at the statement's one
 * clock instant, judged on the locked row's newest version. The outcome is decided once, in the
 * `token` assignment (assignments run left to right, IF evaluates only the branch it takes); it
 * sets LAST_INSERT_ID(expr), which VALUES set first, so the later assignments read the decision
 * from LAST_INSERT_ID().
 *
 * Two forms, because the answer has to carry the new token and the grant's store time:
 * - known block (MySQL 8 and MariaDB): the caller names the block F it last saw for the key and
 *   the statement re-grants only within F; the answer fits the OK packet's insert id —
 *   `now * 1024 + slot` when granted (< 2^53 until the year 2248), 0 when held, 1 when only the
 *   script can decide, 2 when the row is re-grantable but its block is not F;
 * - RETURNING (MariaDB 10.5+; MySQL has none): when the block is unknown, the statement returns
 *   the new token and acquired_at as a result set, from which the block is learnt. A result set
 *   costs metadata packets on every execution, which is why the known-block form exists.
 */
export class MysqlRegrant {
  private readonly known: Statement;
  private readonly returning: Statement;
  /** key → the fence block of its last grant seen here; bounded (cleared when full). */
  private readonly blocks = new Map<string, number>();

  constructor(t: Tables) {
    // The statement's clock is read once, into the VALUES row's acquired_at, and named as
    // VALUES(acquired_at) after that: the same instant (the clock is read once per statement
    // either way), but one evaluation instead of four and a text half as long — mysql2 hashes the
    // whole text on every execute to find the prepared statement, and the server walks every item
    // of it. A new key's placeholder row keeps that acquired_at; it stays expired (expires_at 0).
    // RETURNING cannot name VALUES(); it reads the clock itself (the statement's same instant).
    const now = 'VALUES(acquired_at)';
    // VALUES is evaluated on every path: it seeds LAST_INSERT_ID with the "undecided" answer.
    const insert = (seed: number) =>
      `INSERT INTO ${t.leases} (\`key\`, owner, token, acquired_at, expires_at) ` +
      `VALUES (?, ?, 0 * LAST_INSERT_ID(${seed}), ${MYSQL_NOW}, 0) ON DUPLICATE KEY UPDATE `;
    const rest = (granted: string) =>
      `owner = IF(${granted}, VALUES(owner), owner), ` +
      `acquired_at = IF(${granted}, ${now}, acquired_at), ` +
      `expires_at = IF(${granted}, ${now} + CAST(? AS SIGNED), expires_at)`;
    const held = (at: string) => `token > 0 AND expires_at > ${at}`;
    const stuck = `token = 0 OR token % ${FENCE_SLOTS} = ${FENCE_SLOTS - 1}`;
    this.known = {
      name: `${t.prefix}regrant_known`,
      text:
        insert(1) +
        `token = IF(${held(now)}, token + 0 * LAST_INSERT_ID(0), IF(${stuck}, token, ` +
        `IF(token DIV ${FENCE_SLOTS} = CAST(? AS SIGNED), ` +
        `token + 1 + 0 * LAST_INSERT_ID(${now} * ${FENCE_SLOTS} + (token + 1) % ${FENCE_SLOTS}), ` +
        `token + 0 * LAST_INSERT_ID(2)))), ${rest('LAST_INSERT_ID() > 2')}`,
    };
    this.returning = {
      name: `${t.prefix}regrant`,
      text:
        insert(0) +
        `token = IF(${held(now)} OR ${stuck}, token, LAST_INSERT_ID(token + 1)), ${rest('LAST_INSERT_ID() > 0')} ` +
        `RETURNING IF(LAST_INSERT_ID() > 0, LAST_INSERT_ID(), IF(${held(MYSQL_NOW)}, 0, -1)) AS outcome, acquired_at`,
    };
  }

  /**
   * One key: a granted row, `null` when it is held, or `undefined` when only the acquire script
   * can decide. `exec` runs one statement (prepared when it can); `returning` says the server has
   * RETURNING. At most two round trips, usually one.
   */
  async acquire(
    request: LeaseRequest,
    exec: (statement: Statement, params: readonly SqlValue[]) => Promise<[unknown, unknown]>,
    returning: boolean,
  ): Promise<GrantedRow | null | undefined> {
    const block = this.blocks.get(request.key);
    if (block !== undefined) {
      const [header] = await exec(this.known, [request.key, request.owner, block, request.leaseMs]);
      const answer = Number((header as MysqlHeader).insertId);
      if (answer === 0) return null;
      if (answer > 2) {
        const slot = answer % FENCE_SLOTS;
        const acquiredAt = (answer - slot) / FENCE_SLOTS;
        return this.granted(request, block * FENCE_SLOTS + slot, acquiredAt);
      }
      this.blocks.delete(request.key);
      if (answer === 1) return undefined;
    }
    if (!returning) return undefined;
    const [rows] = await exec(this.returning, [request.key, request.owner, request.leaseMs]);
    const row = (rows as { outcome: unknown; acquired_at: unknown }[])[0];
    const outcome = row ? Number(row.outcome) : -1;
    if (outcome < 0) return undefined;
    if (outcome === 0) return null;
    return this.granted(request, outcome, Number(row!.acquired_at));
  }

  /** Remembers the block of a grant the acquire script made (the next re-grant names it). */
  remember(key: string, token: number): void {
    if (this.blocks.size >= 10_000) this.blocks.clear();
    this.blocks.set(key, Math.floor(token / FENCE_SLOTS));
  }

  private granted(request: LeaseRequest, token: number, acquiredAt: number): GrantedRow {
    this.remember(request.key, token);
    return { key: request.key, token, acquired_at: acquiredAt, expires_at: acquiredAt + request.leaseMs };
  }
}
