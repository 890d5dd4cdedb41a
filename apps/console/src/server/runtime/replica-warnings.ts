// What an operator should know about a replica that joined in a way that will surprise them
// (issue 15 item 11). Two checks, both on data the console already has:
// - "looks-local": an LB in another region measures the replica as near as a local one while the
//   replica's region-mates are far from that LB. That is a meridian-engine started without
//   --rtt-matrix (it adds no network delay, so every LB sees ~1 ms) or a replica filed under the
//   wrong region; either way GORGO's RTT term pulls that region's traffic to it.
// - "model-not-served": the LB that serves the replica routes only other models to its other
//   replicas, so the clients of that LB (who ask for those models) never reach this replica.
// Shown on the replicas page (listReplicas) and logged once per replica and kind by the health
// monitor (ReplicaWarningLog). The console decides here rather than the LB because only the
// console knows every LB's view and each replica's declared region together.
import "server-only";
import type { Logger } from "pino";
import type { LbState } from "@meridian/protocol";
import type { Queryable } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { effectiveHome } from "./config-builder";

export type ReplicaWarningKind = "looks-local" | "model-not-served";

export interface ReplicaWarning {
  kind: ReplicaWarningKind;
  message: string;
}

export interface ReplicaFacts {
  id: string;
  name: string;
  region: string;
  model: string;
  /** The LB serving it as local; null when none does. */
  servingLbId: string | null;
}

export interface LbView {
  id: string;
  name: string;
  region: string;
  /** Replica id -> this LB's RTT estimate to it (null before its first probe). */
  rttMs: ReadonlyMap<string, number | null>;
}

/** A remote replica is "as near as local" when its RTT is below 1/FAR_FACTOR of its region-mates'
 * (median) and at least MIN_GAP_MS shorter: emulated regions are tens to hundreds of ms apart, an
 * engine without emulation answers in ~1 ms, and EWMA noise is far below both margins. */
const FAR_FACTOR = 4;
const MIN_GAP_MS = 20;

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const fmtMs = (ms: number) => `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;

/** Warnings per replica id (replicas without any are absent). Pure. */
export function replicaWarnings(all: readonly ReplicaFacts[], lbs: readonly LbView[]): Map<string, ReplicaWarning[]> {
  const out = new Map<string, ReplicaWarning[]>();
  const add = (id: string, warning: ReplicaWarning) => out.set(id, [...(out.get(id) ?? []), warning]);
  const lbById = new Map(lbs.map((lb) => [lb.id, lb]));

  for (const replica of all) {
    for (const lb of lbs) {
      if (lb.region === replica.region) continue;
      const rtt = lb.rttMs.get(replica.id);
      if (rtt === null || rtt === undefined) continue;
      const mates = all
        .filter((other) => other.id !== replica.id && other.region === replica.region)
        .map((other) => lb.rttMs.get(other.id))
        .filter((v): v is number => v !== null && v !== undefined);
      const far = median(mates);
      if (far === null || rtt * FAR_FACTOR >= far || far - rtt < MIN_GAP_MS) continue;
      add(replica.id, {
        kind: "looks-local",
        message:
          `${lb.name} (${lb.region}) measures ${fmtMs(rtt)} to this ${replica.region} replica but ${fmtMs(far)} to the other ${replica.region} replicas: ` +
          `it emulates no network delay (meridian-engine without --rtt-matrix) or its region is wrong, so GORGO sends it ${lb.region} traffic as if it were local`,
      });
      break; // one LB's view is enough to make the point
    }

    const serving = replica.servingLbId ? lbById.get(replica.servingLbId) : undefined;
    if (!replica.servingLbId) continue;
    const otherModels = new Set(all.filter((o) => o.id !== replica.id && o.servingLbId === replica.servingLbId).map((o) => o.model));
    if (otherModels.size > 0 && !otherModels.has(replica.model)) {
      const lbName = serving?.name ?? replica.servingLbId;
      add(replica.id, {
        kind: "model-not-served",
        message: `${lbName}'s other replicas serve ${[...otherModels].sort().join(", ")}, not ${replica.model}: its clients asking for those models never reach this replica`,
      });
    }
  }
  return out;
}

/** The facts replicaWarnings needs, from the database and each LB's last /admin/state. */
export async function replicaWarningsFrom(q: Queryable, lbState: (lbId: string) => LbState | null): Promise<Map<string, ReplicaWarning[]>> {
  const regionNames = await regionNamesById(q);
  const facts: ReplicaFacts[] = (await q.db.select().from(q.tables.replicas)).map((r) => ({
    id: r.id,
    name: r.name,
    region: regionNames.get(r.regionId) ?? r.regionId,
    model: r.model,
    servingLbId: effectiveHome(r),
  }));
  const views: LbView[] = (await q.db.select().from(q.tables.loadBalancers)).map((lb) => ({
    id: lb.id,
    name: lb.name,
    region: regionNames.get(lb.regionId) ?? lb.regionId,
    rttMs: new Map((lbState(lb.id)?.replicas ?? []).map((r) => [r.id, r.rttMs])),
  }));
  return replicaWarnings(facts, views);
}

/** Logs each replica's warning once, when it first appears (and again if it comes back). */
export class ReplicaWarningLog {
  private logged = new Set<string>();

  constructor(private readonly log: Logger) {}

  report(warnings: ReadonlyMap<string, readonly ReplicaWarning[]>): void {
    const current = new Set<string>();
    for (const [replicaId, list] of warnings) {
      for (const warning of list) {
        const key = `${replicaId}\u0000${warning.kind}`;
        current.add(key);
        if (!this.logged.has(key)) this.log.warn({ replicaId, kind: warning.kind }, warning.message);
      }
    }
    this.logged = current;
  }
}
