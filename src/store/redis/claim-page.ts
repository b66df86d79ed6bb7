import type { LeaseRequest, PageClaim } from '../types.js';
import type { NormalizedPageOp } from '../validate-page.js';
import type { RunScript } from './count.js';
import { SCRIPTS } from './scripts.js';

/**
 * RedisStore.doClaimPage: the lease and the whole page in one EVALSHA of the claim-page script
 * (./claim-page.lua.ts says what it writes and why it is atomic); values reach Lua only as ARGV.
 * `run` is the store's EVALSHA-then-EVAL call.
 */
export async function claimPage(
  run: RunScript,
  request: LeaseRequest,
  ops: readonly NormalizedPageOp[],
): Promise<PageClaim> {
  const args: (string | number)[] = [request.key, request.owner, request.leaseMs];
  for (const op of ops) {
    if (op.op === 'move') args.push('m', op.from, op.to, op.value, op.ttlMs ?? 0);
    else args.push(op.op === 'put' ? 'p' : 'c', op.key, '', op.value, op.ttlMs ?? 0);
  }
  const reply = (await run(SCRIPTS.claimPage, args)) as number[];
  const [now, token] = reply as [number, number];
  if (!token) return { lease: null, results: ops.map(() => false) };
  const { key, owner, leaseMs } = request;
  return {
    lease: { key, owner, token, acquiredAt: now, expiresAt: now + leaseMs },
    results: ops.map((_, i) => reply[i + 2] === 1),
  };
}
