// The requests an LB has admitted and not yet answered to the end, and the watch over those still
// waiting for their target's first byte:
//   - a graceful drain waits for the set to empty (whenIdle);
//   - a request whose first-byte deadline passes (lb-core's deadline.ts), or whose replica turns
//     unhealthy (a peer: its polls fail and its report went stale), while no byte has reached its
//     client, moves to another target when the LB core says one can take it now (redispatch.ts);
//     otherwise it is overdue: it keeps waiting, up to limits.headersTimeoutMs, and is asked again
//     each time capacity may have freed (recheckOverdue, from the balancer's drain), so it moves the
//     moment another target can take it rather than at the cap, two minutes on a frozen replica.
// The decisions are the core's; this file holds the timers and the set.
import type { FirstBytePlan, LbCore, Ticket } from "@meridian/lb-core";
import type { Logger } from "pino";
import { coreNow } from "./core-clock";
import type { ProxyMetrics } from "./metrics";
import { type ExchangeJob, type UpstreamExchange, UpstreamStallError } from "./upstream";

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
  headersTimeoutMs(): number;
}

export class InFlight<J extends WatchedJob<J>> {
  private readonly jobs = new Set<J>();
  /** Jobs past their first-byte deadline that no other target could take yet, with the exchange that
   * stalled (a job that moved or ended has another exchange, or none, and leaves the map). */
  private readonly overdue = new Map<J, UpstreamExchange<J>>();
  private readonly idleWaiters = new Set<() => void>();

  constructor(private readonly host: InFlightHost<J>) {}

  get size(): number {
    return this.jobs.size;
  }

  add(job: J): void {
    this.jobs.add(job);
  }

  delete(job: J): void {
    this.jobs.delete(job);
    this.overdue.delete(job);
    if (this.jobs.size === 0) this.wakeWaiters();
  }

  /** A snapshot, safe to act on while jobs end. */
  list(): J[] {
    return [...this.jobs];
  }

  /** Resolves true once nothing is in flight, false when `timeoutMs` passes first (or wakeWaiters()). */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.jobs.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.idleWaiters.delete(wake);
        resolve(this.jobs.size === 0);
      };
      const timer = setTimeout(wake, timeoutMs);
      this.idleWaiters.add(wake);
    });
  }

  wakeWaiters(): void {
    for (const wake of [...this.idleWaiters]) wake();
  }

  /** Arms the first-byte deadline of a dispatch just made. */
  watch(job: J, exchange: UpstreamExchange<J>, plan: FirstBytePlan): void {
    exchange.armDeadline(plan.deadlineMs, () => this.deadlinePassed(job, exchange));
  }

  private deadlinePassed(job: J, exchange: UpstreamExchange<J>): void {
    const { host } = this;
    if (this.moveOverdue(job, exchange)) return;
    const capMs = host.headersTimeoutMs();
    if (performance.now() - exchange.dispatchedAt < capMs) {
      if (!this.overdue.has(job)) {
        host.logger.info(
          { target: exchange.target.id, deadlineMs: Math.round(job.plan?.deadlineMs ?? 0) },
          "no first byte within the deadline; no other target can take it yet, so it waits",
        );
      }
      this.overdue.set(job, exchange);
      exchange.armDeadline(capMs, () => this.deadlinePassed(job, exchange));
      return;
    }
    this.overdue.delete(job);
    exchange.abort(new UpstreamStallError(`no first byte from ${exchange.target.id} within ${capMs} ms`, "timeout"));
  }

  /** Moves an overdue job when the core says another target can take it now; true when it moved. */
  private moveOverdue(job: J, exchange: UpstreamExchange<J>): boolean {
    const { host } = this;
    const { target } = exchange;
    if (!host.canRetry(job) || !host.core.canRedispatch(job.ticket, coreNow(), "deadline")) return false;
    this.overdue.delete(job);
    const deadlineMs = Math.round(job.plan?.deadlineMs ?? 0);
    host.metrics.redispatched.inc({ replica: target.id, reason: "first_byte_deadline" });
    const waitedMs = Math.round(performance.now() - exchange.dispatchedAt);
    host.logger.warn({ target: target.id, deadlineMs, waitedMs, expectedMs: job.plan?.expectedMs }, "no first byte within the deadline; re-dispatching");
    exchange.abort(new UpstreamStallError(`no first byte from ${target.id} within ${deadlineMs} ms`, "first_byte_deadline"));
    return true;
  }

  /** Capacity may have freed (a request ended, a scrape, probe or peer report came in, a config
   * applied): each overdue job still waiting on the exchange that stalled moves if a target can take it. */
  recheckOverdue(): void {
    for (const [job, exchange] of [...this.overdue]) {
      if (job.exchange !== exchange || !exchange.waiting) this.overdue.delete(job);
      else this.moveOverdue(job, exchange);
    }
  }

  /** A poll of the peer failed: once no fresh report of it is left, it is down or frozen, and will
   * not answer what waits on it either. */
  peerPollFailed(peerId: string): void {
    const { core } = this.host;
    if (!core.peers.get(peerId)?.freshReport(coreNow(), core.peerPollIntervalMs)) this.targetUnhealthy("peer", peerId);
  }

  /** A replica turned unhealthy, or a peer stopped answering its polls: requests waiting on it with
   * no byte sent to their clients move (a frozen target would otherwise hold them to the cap). */
  targetUnhealthy(kind: "replica" | "peer", targetId: string): void {
    const { host } = this;
    const now = coreNow();
    const reason = kind === "replica" ? "replica_unhealthy" : "peer_unhealthy";
    for (const job of this.list()) {
      const exchange = job.exchange;
      if (!exchange?.waiting || exchange.target.kind !== kind || exchange.target.id !== targetId) continue;
      // Booked on the URL a re-pointed replica had: the health of the engine there now is not its own.
      if (!host.core.onCurrentTarget(job.ticket)) continue;
      if (!host.canRetry(job) || !host.core.canRedispatch(job.ticket, now, "unhealthy")) continue;
      host.metrics.redispatched.inc({ replica: targetId, reason });
      host.logger.warn({ target: targetId, waitedMs: Math.round(performance.now() - exchange.dispatchedAt) }, `${kind} turned unhealthy; re-dispatching`);
      exchange.abort(new UpstreamStallError(`${kind} ${targetId} turned unhealthy before answering`, reason));
    }
  }
}
