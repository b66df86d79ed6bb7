import { ACQUIRE_LUA } from './acquire.lua.js';
import { APPLY_LUA } from './apply.lua.js';
import { CLAIM_PAGE_LUA } from './claim-page.lua.js';
import { COUNT_LUA } from './count.lua.js';
import { DELETE_LUA } from './delete.lua.js';
import { EXTEND_LUA } from './extend.lua.js';
import { GET_LUA } from './get.lua.js';
import { GET_MANY_LUA } from './get-many.lua.js';
import { INSPECT_LUA } from './inspect.lua.js';
import { LIST_LEASES_LUA } from './list-leases.lua.js';
import { NOW_LUA } from './now.lua.js';
import { PUT_LUA } from './put.lua.js';
import { RELEASE_LUA } from './release.lua.js';
import { SCAN_LUA } from './scan.lua.js';
import { luaScript } from './script.js';
import { SWEEP_LUA } from './sweep.lua.js';

/** Every script the Redis store runs, each with its SHA-1 (one file per script, see there). */
export const SCRIPTS = {
  now: luaScript('now', NOW_LUA),
  acquire: luaScript('acquire', ACQUIRE_LUA),
  extend: luaScript('extend', EXTEND_LUA),
  release: luaScript('release', RELEASE_LUA),
  apply: luaScript('apply', APPLY_LUA),
  claimPage: luaScript('claim-page', CLAIM_PAGE_LUA),
  inspect: luaScript('inspect', INSPECT_LUA),
  listLeases: luaScript('list-leases', LIST_LEASES_LUA),
  put: luaScript('put', PUT_LUA),
  get: luaScript('get', GET_LUA),
  getMany: luaScript('get-many', GET_MANY_LUA),
  count: luaScript('count', COUNT_LUA),
  delete: luaScript('delete', DELETE_LUA),
  scan: luaScript('scan', SCAN_LUA),
  sweep: luaScript('sweep', SWEEP_LUA),
} as const;
