// The requests an LB has admitted and not yet answered to the end, and the watch over those still
// waiting for their target's first byte:
//   - a request whose first-byte deadline passes (lb-core's deadline.ts), or whose replica turns
//     unhealthy (a peer: its polls fail and its report went stale), while no byte has reached its
//     client, moves to another target when the LB core says one can take it now (redispatch.ts);
//     otherwise it is stalled: it keeps waiting, up to limits.headersTimeoutMs, and is asked again
//     each time capacity may have freed (recheckStalled, from the balancer's drain), so it moves the
//     moment another target can take it rather than at the cap, two minutes on a frozen replica.
//     The same holds for a request whose target turned unhealthy while nothing else could take it.
// The decisions are the core's; this file holds the timers and the set.
import type { FirstBytePlan, LbCore, Ticket } from "@meridian/lb-core";
import type { Logger } from "pino";
import { coreNow } from "./core-clock";
import { type ProxyMetrics, targetLabel } from "./metrics";
import { type ExchangeJob, type RedispatchReason, type UpstreamExchange, UpstreamStallError } from "./upstream";

export interface WatchedJob<J> extends ExchangeJob {
  ticket: Ticket<J>;
  exchange: UpstreamExchange<J & ExchangeJob> | null;
  plan: FirstBytePlan | null;
}

export interface InFlightHost<J> {
  core: LbCore<J>;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Whether the request may still leave its target (nothing sent to the client, a try left). */
  canRetry(job: J): boolean;
  /** Whether the config still admits the request's client key. */
  admitted(job: J): boolean;
  headersTimeoutMs(): number;
}

/** Why a stalled job waits where it is: past its first-byte deadline, on a target that turned
 * unhealthy, or both; in each case no other target could take it when that happened. */
interface Stall<J extends ExchangeJob> {
  /** The exchange that stalled: a job that moved or ended has another one, or none. */
  exchange: UpstreamExchange<J>;
  pastDeadline: boolean;
  onUnhealthy: boolean;
}

export class InFlight<J extends WatchedJob<J>> {
  private readonly jobs = new Set<J>();
  private readonly stalled = new Map<J, Stall<J>>();
  /** A recheck runs; a drain it causes (a moved request that fails ends, and drains) asks for
   * another pass instead of nesting one. */
  private rechecking = false;
  private recheckAgain = false;

  constructor(private readonly host: InFlightHost<J>) {}

  get size(): number {
    return this.jobs.size;
  }

  add(job: J): void {
    this.jobs.add(job);
  }

  delete(job: J): void {
    this.jobs.delete(job);
    this.stalled.delete(job);
  }

  /** A snapshot, safe to act on while jobs end. */
  list(): J[] {
    return [...this.jobs];
  }

  /** Arms the first-byte deadline of a dispatch just made. */
  watch(job: J, exchange: UpstreamExchange<J>, plan: FirstBytePlan): void {
    exchange.armDeadline(plan.deadlineMs, () => this.deadlinePassed(job, exchange));
  }

  /** A config changed limits.headersTimeoutMs: every request still waiting for its first byte is
   * watched against the new cap (its deadline, capped; or the cap, once its deadline passed), so an
   * operator who lowers it to flush requests stuck on a hung engine reaches them too. */
  capChanged(): void {
    const capMs = this.host.headersTimeoutMs();
    for (const job of this.list()) {
      const exchange = job.exchange;
      if (!exchange?.waiting) continue;
      const deadlineMs = this.stallOn(job, exchange)?.pastDeadline ? capMs : Math.min(job.plan?.deadlineMs ?? capMs, capMs);
      exchange.armDeadline(deadlineMs, () => this.deadlinePassed(job, exchange));
    }
  }

  private deadlinePassed(job: J, exchange: UpstreamExchange<J>): void {
    const { host } = this;
    if (this.move(job, exchange, "deadline")) return;
    const capMs = host.headersTimeoutMs();
    if (performance.now() - exchange.dispatchedAt < capMs) {
      const stall = this.stallOn(job, exchange);
      // With no try left, or its key revoked since (revoked-keys.ts: it finishes where it is), its
      // deadline cannot move it: it waits for its answer.
      if (!host.canRetry(job) || !host.admitted(job)) {
        this.deadlineCannotMove(job);
        exchange.armDeadline(capMs, () => this.deadlinePassed(job, exchange));
        return;
      }
      if (!stall?.pastDeadline) {
        host.logger.info(
          { target: exchange.target.id, deadlineMs: Math.round(job.plan?.deadlineMs ?? 0) },
          "first-byte deadline passed; no other target can take it yet, so it waits",
        );
      }
      this.stalled.set(job, { exchange, pastDeadline: true, onUnhealthy: stall?.onUnhealthy ?? false });
      exchange.armDeadline(capMs, () => this.deadlinePassed(job, exchange));
      return;
    }
    this.stalled.delete(job);
    exchange.abort(new UpstreamStallError(`no first byte from ${exchange.target.id} within ${capMs} ms`, "timeout"));
  }

  /**
   * Moves a job off the target it waits on when the core says another can take it (redispatch.ts):
   * past its deadline ("deadline": at it, or later when capacity may have freed), or off a target
   * that turned unhealthy ("unhealthy"). True when it moved.
   */
  private move(job: J, exchange: UpstreamExchange<J>, cause: "deadline" | "unhealthy"): boolean {
    const { host } = this;
    const { target } = exchange;
    if (!host.canRetry(job)) return false;
    // A slow target may still answer a request whose key was revoked; the retry would refuse it
    // (401). So it waits there, and is asked again only if its target goes down.
    if (cause !== "unhealthy" && !host.admitted(job)) {
      this.deadlineCannotMove(job);
      return false;
    }
    if (!host.core.canRedispatch(job.ticket, coreNow(), cause)) return false;
    this.stalled.delete(job);
    if (cause === "unhealthy") {
      const reason = target.kind === "replica" ? "replica_unhealthy" : "peer_unhealthy";
      exchange.abort(new UpstreamStallError(`${target.kind} ${target.id} turned unhealthy before answering`, reason));
      return true;
    }
    const deadlineMs = Math.round(job.plan?.deadlineMs ?? 0);
    exchange.abort(new UpstreamStallError(`no first byte from ${target.id} within ${deadlineMs} ms`, "first_byte_deadline"));
    return true;
  }

  /** A stalled request left `exchange` and its retry placed it (the balancer's retry, after its client
   * key passed): the one place a move is logged and counted, whatever made it (its deadline, the cap,
   * its target turning unhealthy). A retry refused (a revoked key, a draining LB) moved nothing. */
  moved(exchange: UpstreamExchange<J>, reason: RedispatchReason): void {
    const { host } = this;
    const { target } = exchange;
    host.metrics.redispatched.inc({ replica: targetLabel(target), reason });
    const waitedMs = Math.round(performance.now() - exchange.dispatchedAt);
    if (reason === "first_byte_deadline") {
      const plan = exchange.job.plan;
      const fields = { target: target.id, deadlineMs: Math.round(plan?.deadlineMs ?? 0), waitedMs, expectedMs: plan?.expectedMs };
      host.logger.warn(fields, "no first byte within the deadline; re-dispatching");
    } else if (reason === "headers_timeout") {
      host.logger.warn(
        { target: target.id, headersTimeoutMs: host.headersTimeoutMs(), waitedMs },
        "no first byte within limits.headersTimeoutMs; re-dispatching",
      );
    } else host.logger.warn({ target: target.id, waitedMs }, `${target.kind} turned unhealthy; re-dispatching`);
  }

  /** The job's stall on `exchange`, if it stalled there: one on an earlier exchange is stale. */
  private stallOn(job: J, exchange: UpstreamExchange<J>): Stall<J> | undefined {
    const stall = this.stalled.get(job);
    return stall?.exchange === exchange ? stall : undefined;
  }

  /** Its deadline can no longer move the job: it stays stalled only while its target is down, which
   * may still move it (recheck). */
  private deadlineCannotMove(job: J): void {
    if (!this.stalled.get(job)?.onUnhealthy) this.stalled.delete(job);
  }

  /** Capacity may have freed (a request ended, a scrape, probe or peer report came in, a config
   * applied): each stalled job still waiting on the exchange that stalled moves if a target can take it. */
  recheckStalled(): void {
    if (this.rechecking) {
      this.recheckAgain = true;
      return;
    }
    this.rechecking = true;
    try {
      do {
        this.recheckAgain = false;
        for (const [job, stall] of [...this.stalled]) this.recheck(job, stall);
      } while (this.recheckAgain);
    } finally {
      this.rechecking = false;
    }
  }

  private recheck(job: J, stall: Stall<J>): void {
    const { exchange } = stall;
    // Replaced or removed meanwhile, by what an earlier move of this pass set off.
    if (this.stalled.get(job) !== stall) return;
    if (job.exchange !== exchange || !exchange.waiting) {
      this.stalled.delete(job);
      return;
    }
    if (stall.onUnhealthy) {
      // The record it was booked on: a replica or peer re-pointed since is another engine or LB.
      if (this.host.core.bookedTargetDown(job.ticket, coreNow())) {
        this.move(job, exchange, "unhealthy");
        return;
      }
      // Healthy again: it may answer after all. Past its deadline it stays stalled, else its
      // deadline timer watches it again.
      stall.onUnhealthy = false;
      if (!stall.pastDeadline) {
        this.stalled.delete(job);
        return;
      }
    }
    this.move(job, exchange, "deadline");
  }

  /** A poll of the peer failed: once no fresh report of it is left, it is down or frozen, and will
   * not answer what waits on it either. */
  peerPollFailed(peerId: string): void {
    const { core } = this.host;
    if (!core.peers.get(peerId)?.freshReport(coreNow(), core.peerPollIntervalMs)) this.targetUnhealthy("peer", peerId);
  }

  /** A replica turned unhealthy, or a peer stopped answering its polls: requests waiting on it with
   * no byte sent to their clients move (a frozen target would otherwise hold them to the cap), or,
   * with nowhere to go yet, stall until somewhere is (recheckStalled). */
  targetUnhealthy(kind: "replica" | "peer", targetId: string): void {
    for (const job of this.list()) {
      const exchange = job.exchange;
      if (!exchange?.waiting || exchange.target.kind !== kind || exchange.target.id !== targetId) continue;
      // Booked on the URL a re-pointed replica had: the health of the engine there now is not its own.
      if (!this.host.core.onCurrentTarget(job.ticket)) continue;
      if (this.move(job, exchange, "unhealthy") || !this.host.canRetry(job)) continue;
      const stall = this.stallOn(job, exchange);
      if (!stall?.onUnhealthy) this.host.logger.info({ target: targetId }, `${kind} turned unhealthy; no other target can take it yet, so it waits`);
      this.stalled.set(job, { exchange, pastDeadline: stall?.pastDeadline ?? false, onUnhealthy: true });
    }
  }
}
