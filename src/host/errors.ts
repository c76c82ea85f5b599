/**
 * Failures of the host's API as values with a stable `code` and the HTTP status the app answers with. Compared by
 * `name` as well as class, because `instanceof` fails across realms.
 * @module
 */

export const ERROR_STATUS = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_pid: 400,
  not_found: 404,
  process_active: 409,
  process_not_active: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  too_many_processes: 429,
  too_many_subscribers: 429,
  internal: 500,
  no_environment: 503,
} as const;

export type HostErrorCode = keyof typeof ERROR_STATUS;

export class HostError extends Error {
  override name = "HostError";
  readonly code: HostErrorCode;
  constructor(code: HostErrorCode, message: string) {
    super(message);
    this.code = code;
  }
  get status(): (typeof ERROR_STATUS)[HostErrorCode] {
    return ERROR_STATUS[this.code];
  }
}

export function isHostError(value: unknown): value is HostError {
  return (
    value instanceof HostError ||
    (typeof value === "object" &&
      value !== null &&
      (value as { name?: unknown }).name === "HostError" &&
      typeof (value as { code?: unknown }).code === "string" &&
      (value as { code: string }).code in ERROR_STATUS)
  );
}
