// Automatic failback (SkyLB's controller returns a recovered LB's region to it): an LB that the
// health monitor failed over is failed back once it has answered every probe for a healthy period
// (MERIDIAN_AUTO_FAILBACK_AFTER_S; 30 s in the demo, off otherwise). Audited as the system action
// "lb.failback.automatic" by system:health-monitor.
//
// Rule (failbackDue):
// - only failovers the health monitor made (failedOverAutomatically): an operator's failover is
//   deliberate (maintenance, a drill) and stays until an operator fails it back;
// - the period counts from the first healthy probe after the last failed one, so an LB that flaps
//   never qualifies; a console restart starts the count again (the probes are the evidence). An
//   LB must fail probes before it is failed over automatically, which clears its run, so a deleted
//   LB's leftover entry can never shorten the period of a later one with the same id;
// - every console tracks the runs from its own probes (its LBs page shows when the LB fails back),
//   and only the leader fails back.
import "server-only";
import type { Logger } from "pino";
import type { LoadBalancerRow } from "@meridian/db";
import { SYSTEM_HEALTH } from "../audit-trail";
import type { FailoverService } from "./failover";

export interface AutoFailbackDeps {
  log: Logger;
  failover: Pick<FailoverService, "failback">;
  /** How long the LB must stay healthy; 0 turns automatic failback off. */
  healthyForMs: number;
}

export interface FailbackCheck {
  lb: Pick<LoadBalancerRow, "state" | "failedOverAutomatically">;
  /** When the current unbroken run of healthy probes began; null while the LB does not answer. */
  healthySince: number | null;
  now: number;
  healthyForMs: number;
}

/** Whether the LB is due to be failed back automatically now. */
export function failbackDue({ lb, healthySince, now, healthyForMs }: FailbackCheck): boolean {
  if (healthyForMs <= 0 || lb.state !== "failed-over" || !lb.failedOverAutomatically) return false;
  return healthySince !== null && now - healthySince >= healthyForMs;
}

export class AutoFailback {
  private readonly healthySince = new Map<string, number>();

  constructor(private readonly deps: AutoFailbackDeps) {}

  /** After every probe of an LB, on every console (following or leading): tracks its healthy run.
   * Fed only while leading, a console deposed while the LB died never saw it fail, and once elected
   * again it counted the run from before the failure (a failback after a single healthy probe). */
  observe(lbId: string, healthy: boolean, now: number): void {
    if (!healthy) this.healthySince.delete(lbId);
    else if (!this.healthySince.has(lbId)) this.healthySince.set(lbId, now);
  }

  /** While leading, after the probe was observed: fails the LB back when its run is long enough. */
  async failBackIfDue(lb: LoadBalancerRow, now: number): Promise<void> {
    const since = this.healthySince.get(lb.id) ?? null;
    if (since === null || !failbackDue({ lb, healthySince: since, now, healthyForMs: this.deps.healthyForMs })) return;
    try {
      await this.deps.failover.failback(lb.id, SYSTEM_HEALTH, { automatic: true, healthyForMs: now - since });
    } catch (error) {
      // The failback re-checks the LB inside its transaction; a refusal (e.g. an operator failed it
      // back a moment ago) is not an error of ours.
      this.deps.log.info({ lbId: lb.id, reason: error instanceof Error ? error.message : String(error) }, "automatic failback skipped");
    }
  }

  /** When the LB is next failed back automatically (if it keeps answering), or null. */
  dueAt(lb: Pick<LoadBalancerRow, "id" | "state" | "failedOverAutomatically">): number | null {
    if (this.deps.healthyForMs <= 0 || lb.state !== "failed-over" || !lb.failedOverAutomatically) return null;
    const since = this.healthySince.get(lb.id);
    return since === undefined ? null : since + this.deps.healthyForMs;
  }
}
