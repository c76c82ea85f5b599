/**
 * The one check of process slots, on every host: the process service counts its live processes, the edge's registry
 * counts its records, and both ask this whether one more may start. A refusal is a 429 whose `Retry-After` is the
 * host's {@link SLOT_RETRY_SECONDS}.
 * @module
 */
import { retryLater } from "../errors.js";
import { SLOT_RETRY_SECONDS } from "../limits.js";

/** Processes that may be active at once: across the host, and of one tenant. */
export interface SlotQuotas {
  maxActive: number;
  tenantMaxActive: number;
}

/**
 * Throws the 429 `too_many_processes` when `active` processes fill the host's slots, or `tenant_too_many_processes`
 * when `tenantActive` of them are the tenant's and fill its own.
 */
export function checkSlots(active: number, tenantActive: number, quotas: SlotQuotas): void {
  if (active >= quotas.maxActive) {
    throw retryLater(
      "too_many_processes",
      `${quotas.maxActive} processes are active already: wait for one to finish`,
      SLOT_RETRY_SECONDS,
    );
  }
  if (tenantActive >= quotas.tenantMaxActive) {
    throw retryLater(
      "tenant_too_many_processes",
      `This tenant has ${quotas.tenantMaxActive} processes active already: wait for one to finish`,
      SLOT_RETRY_SECONDS,
    );
  }
}
