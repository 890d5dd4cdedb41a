// A config push that revokes a client key (removes it, or replaces its digest), or that makes keys
// required, reaches the requests still waiting in the hold queue that it no longer admits: they have
// not started, and a new request with the same credential (or none) is refused now, so they are too,
// with the same 401 (client-entrance.ts, recheck). Left alone, they were
// dispatched for up to queueMaxWaitMs after the revocation, and forwarded to key-requiring peers as
// keyed. Requests already dispatched finish. Where keys are not required, a dropped key's request,
// held or in flight, goes on as anonymous for where it may go (a peer that requires keys takes it no
// more); it is never counted as anonymous traffic (the key's series go with the key:
// client-metrics.ts). A request in flight at a revocation finishes where it is, but is not retried
// elsewhere.
import type { LbCore } from "@meridian/lb-core";
import type { LbConfig } from "@meridian/protocol";
import type { HttpError } from "./errors";
import type { Job } from "./job";

/** Takes the held requests `config` no longer admits out of the hold queue, with their refusals.
 * All are taken before any is answered: answering one drains the queue, which would place the next. */
export function takeRevokedHeld(core: LbCore<Job>, config: LbConfig): { job: Job; refusal: HttpError }[] {
  const revoked: { job: Job; refusal: HttpError }[] = [];
  for (const ticket of core.queue.waiting()) {
    const job = ticket.owner;
    const refusal = recheckClient(job, config);
    if (refusal !== null && core.cancel(ticket)) revoked.push({ job, refusal });
  }
  return revoked;
}

/** The requests in flight that `config` still admits count as keyed as their credential now does
 * (a key dropped where keys are not required goes on as anonymous), for placement only: who they
 * are counted for does not change (client-metrics.ts counts a key only while the config has it).
 * Otherwise the move that a deadline or an unhealthy target makes would count a peer that requires
 * keys as a place to go, and the retry, which rechecks the key, would find it refuses them (a 502
 * for a request its replica might still have answered). Those it no longer admits finish where they
 * are (in-flight.ts). */
export function recheckInFlight(jobs: Iterable<Job>, config: LbConfig): void {
  for (const job of jobs) if (!job.done && job.client.admits(config)) job.ticket.clientKeyed = job.client.keyedUnder(config);
}

/** The refusal `config` gives the job's client now, or null; a client it still admits is keyed (for
 * a peer that requires keys) as its credential now counts. Also asked before a retry: a retry sends
 * the request to a target anew, so a request in flight when its key was revoked is not sent to a
 * second replica (or held, then dispatched for up to queueMaxWaitMs) after its first one failed. */
export function recheckClient(job: Job, config: LbConfig): HttpError | null {
  const refusal = job.client.recheck(config);
  if (refusal === null) job.ticket.clientKeyed = job.client.keyedUnder(config);
  return refusal;
}
