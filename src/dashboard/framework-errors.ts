/**
 * Errors the HTTP framework (Fastify) raises before a route runs — a body over the limit, a media
 * type no parser takes, a path that is not valid percent-encoding — as the dashboard's own error
 * shape: a stable code and a message that says what to send instead, never a framework code
 * (`FST_ERR_…`) a client would have to know.
 */
export interface MappedError {
  status: number;
  code: string;
  message: string;
}

/** The dashboard's answer to a framework error with HTTP status `status` (< 500) and code `code`. */
export function frameworkError(
  status: number,
  code: string | undefined,
  message: string,
  bodyLimit: number,
  contentType: string | undefined,
): MappedError {
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
        message: `request body is over ${bodyLimit / 1024} KiB; the dashboard's actions take no body (or a small form)`,
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: `Content-Type ${JSON.stringify(contentType ?? '')} is not accepted: send application/json, application/x-www-form-urlencoded, or no body`,
      };
    case 'FST_ERR_BAD_URL':
      return {
        status: 400,
        code: 'INVALID_ARGUMENT',
        message: 'the request path is not valid percent-encoding (encode names with encodeURIComponent)',
      };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 414, code: 'INVALID_ARGUMENT', message: 'a path segment is too long' };
    default:
      return { status, code: status === 400 ? 'INVALID_ARGUMENT' : 'BAD_REQUEST', message };
  }
}
