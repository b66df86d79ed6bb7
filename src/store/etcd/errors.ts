import { OncelyError } from '../../core/errors.js';
import { redactSecret } from '../../core/redact.js';

/**
 * Maps an etcd3 / gRPC error to an `OncelyError`. Everything the server or network may recover
 * from is `STORE_UNAVAILABLE`; a request etcd refuses for its size or operation count is
 * `INVALID_ARGUMENT` with the server setting to change. The password never appears.
 */
export function classifyEtcdError(err: unknown, operation: string, secret: string | undefined): OncelyError {
  if (err instanceof OncelyError) return err;
  const message = redactSecret(err instanceof Error ? err.message : String(err), secret);
  const hint = hintFor(message);
  const code = /request is too large|too many operations|larger than max/.test(message)
    ? 'INVALID_ARGUMENT'
    : 'STORE_UNAVAILABLE';
  return new OncelyError(code, `etcd store: ${operation} failed: ${message}${hint ? ` (${hint})` : ''}`, {
    cause: err,
  });
}

function hintFor(message: string): string | undefined {
  if (/request is too large|larger than max/.test(message))
    return "the batch is larger than the server's --max-request-bytes (1.5 MiB by default); send smaller batches or raise it";
  if (/too many operations/.test(message))
    return "the server's --max-txn-ops is below 100; raise it to at least 128";
  if (/authentication failed|invalid auth token|user name is empty/i.test(message))
    return 'check the user and password in the store URL';
  if (/permission denied/i.test(message))
    return "the etcd user lacks read/write permission on the store's key prefix";
  if (/ECONNREFUSED|No connection established|UNAVAILABLE/i.test(message))
    return 'is etcd running and listening on that host and port?';
  return undefined;
}
