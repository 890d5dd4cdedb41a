// Where each region's clients are sent. The entrypoints table says which LB a region is assigned to
// (its own LB, or the LB a failover moved it to). That LB may be failed without having been failed
// over: an LB that never answered is only marked failed, and an LB that just stopped answering is
// failed over only after several probes, or never when automatic failover is off. Clients must not
// be sent to it meanwhile, so the map resolves such a region to the nearest LB that takes clients
// (nearest-lb.ts, the rule failover uses), or to nothing, which is an alarm: logged at warn once
// per change, shown on the LBs page and exported as a metric. While the assigned LB is still
// starting (never seen healthy, within the console's startup grace: lb-health.ts) the change is
// logged at info: at startup the LBs and the console come up in any order, and an operator should
// not read a warning into that. A region still unserved when the grace ends is logged at warn then.
import "server-only";
import type { Logger } from "pino";
import type { Store } from "@meridian/db";
import { regionNamesById } from "../region-names";
import type { LbHealthBook } from "./lb-health";
import { lbTakesClients, nearestHealthyLb } from "./nearest-lb";

/** What the resolver uses, and nothing else. */
export interface EntrypointResolverDeps {
  store: Store;
  log: Logger;
  book: Pick<LbHealthBook, "isHealthy" | "lb" | "probedAll" | "starting">;
}

export type EntrypointStatus = "assigned" | "fallback" | "unresolved";

export interface EntrypointResolution {
  /** Region name. */
  region: string;
  /** The LB the region is assigned to: its own LB, or the one a failover moved it to. */
  assignedLbId: string;
  /** The LB the region's clients go to now; null when no LB takes clients. */
  lbId: string | null;
  url: string | null;
  status: EntrypointStatus;
  /** Why the clients do not go to the assigned LB; null when they do. */
  reason: string | null;
  /** Observed RTT from the region to the fallback LB's region; null when unknown or not a fallback. */
  rttMs: number | null;
}

export class EntrypointResolver {
  /** The last resolution logged per region, so a change is logged once. */
  private readonly logged = new Map<string, string>();

  constructor(private readonly deps: EntrypointResolverDeps) {}

  /** Every region with an entrypoint, sorted by region name. */
  async resolve(): Promise<EntrypointResolution[]> {
    const { store, book } = this.deps;
    const { db, tables } = store;
    const regionNames = await regionNamesById(store);
    const lbs = new Map((await db.select().from(tables.loadBalancers)).map((lb) => [lb.id, lb]));
    const out: EntrypointResolution[] = [];
    for (const entry of await db.select().from(tables.entrypoints)) {
      const region = regionNames.get(entry.regionId);
      const assigned = lbs.get(entry.lbId);
      if (!region || !assigned) continue;
      if (lbTakesClients(assigned, book)) {
        out.push({ region, assignedLbId: assigned.id, lbId: assigned.id, url: assigned.url, status: "assigned", reason: null, rttMs: null });
        continue;
      }
      const probe = book.lb(assigned.id);
      const why =
        assigned.state !== "healthy"
          ? `${assigned.name} is ${assigned.state}`
          : probe?.healthy === false
            ? `${assigned.name} does not answer its health probe (${probe.error ?? "no answer"})`
            : `${assigned.name} has not answered a health probe yet`;
      const nearest = await nearestHealthyLb(store, book, entry.regionId, assigned.id);
      out.push(
        nearest
          ? {
              region,
              assignedLbId: assigned.id,
              lbId: nearest.lb.id,
              url: nearest.lb.url,
              status: "fallback",
              reason: `${why}; its clients go to the nearest healthy LB, ${nearest.lb.name}`,
              rttMs: nearest.rttMs,
            }
          : { region, assignedLbId: assigned.id, lbId: null, url: null, status: "unresolved", reason: `${why}, and no other LB is healthy`, rttMs: null },
      );
    }
    out.sort((a, b) => a.region.localeCompare(b.region));
    this.logChanges(out, Date.now());
    return out;
  }

  private logChanges(resolutions: readonly EntrypointResolution[], now: number): void {
    const seen = new Set<string>();
    for (const r of resolutions) {
      seen.add(r.region);
      const starting = r.status !== "assigned" && this.deps.book.starting(r.assignedLbId, now);
      // "starting" is part of the key: a region still unserved when its LB's grace ends is logged again, at warn.
      const key = `${r.status}:${r.lbId ?? ""}${starting ? ":starting" : ""}`;
      const before = this.logged.get(r.region);
      if (before === key) continue;
      this.logged.set(r.region, key);
      const fields = { region: r.region, assignedLbId: r.assignedLbId, lbId: r.lbId, reason: r.reason };
      const alarm = (msg: string) => (starting ? this.deps.log.info(fields, `${msg} (its LB is still starting)`) : this.deps.log.warn(fields, msg));
      if (r.status === "unresolved") alarm("entrypoint unresolved: no healthy LB for the region's clients");
      else if (r.status === "fallback") alarm("entrypoint falls back to another region's LB");
      else if (before !== undefined) this.deps.log.info(fields, "entrypoint back on its assigned LB");
    }
    for (const region of this.logged.keys()) if (!seen.has(region)) this.logged.delete(region);
  }
}
