/**
 * Audit entry ids and times (control/audit.ts): a scheduler's entries never go back in time, and
 * one scheduler's latest time is not another's. Before, the guard was one per process: the
 * simulator's runs one after another (each from the same epoch) gave every later run's entries
 * the earlier run's latest time, and a fire time's `removed` record read its schedule's removal as
 * seconds after it happened (three jobs, the fault mix, seeds 78, 245, 273 of a 300-seed sweep).
 */
import { expect, it } from 'vitest';
import { type AuditContext, auditOps } from '../src/scheduler/control/audit.js';

const change = { action: 'schedules.remove' as const, target: 's1', job: 'j', scheduleId: 's1' };
const atOf = (ops: ReturnType<typeof auditOps>) =>
  (JSON.parse((ops[0] as { value: string }).value) as { at: number }).at;

it("keeps one scheduler's entries in call order, and another scheduler's times its own", () => {
  const a: AuditContext = { actor: 'a', retentionMs: 60_000 };
  const b: AuditContext = { actor: 'b', retentionMs: 60_000 };
  expect(atOf(auditOps(change, 1_000_000, a))).toBe(1_000_000);
  // The store's clock went back for this writer: its entry stays after its previous one.
  expect(atOf(auditOps(change, 999_000, a))).toBe(1_000_000);
  // Another scheduler (another store, another clock) is not held to a's latest time.
  expect(atOf(auditOps(change, 5_000, b))).toBe(5_000);
  const [x, y] = [auditOps(change, 5_001, b), auditOps(change, 5_001, b)].map((ops) => ops[0]!.key);
  expect(x! < y!).toBe(true);
});
