// What an LbCore is built with, and what its drain hands back: the types its drivers (the proxy, the
// simulator) name. lb-core.ts holds the decisions.
import type { CandidateView, PrefixMatcher } from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import type { PlacementLogEntry, Placement } from "./placement";
import type { Ticket } from "./ticket";

/** A queued request the core has now placed, forwarded or refused. */
export interface Settled<J> {
  ticket: Ticket<J>;
  placement: Exclude<Placement, { kind: "hold" }>;
}

export interface LbCoreOptions {
  config: LbConfig;
  /** Seeds policy tie-breaks and random policies. */
  seed: number;
  /** How often peers are polled: their reports go stale after 3 intervals. */
  peerPollIntervalMs: number;
  /** Observes every placement decision, with the candidate views the policy saw (tests, tracing). */
  onPlacement?: (entry: PlacementLogEntry, candidates: readonly CandidateView[], ticket: Ticket<unknown>) => void;
  /** `learned` (default): the index sizes each replica from its engine's KV capacity and learns from
   * its cached-token reports and restarts (@meridian/routing cache-truth.ts). `static`: TTL and
   * global capacity only, the index before it learned (the simulator's yardstick). */
  cacheModel?: CacheModel;
  /** Answers the policies' prefix matches instead of the index: the simulator's oracle over the
   * engines' true caches. The index still learns, for state and peer snapshots. */
  matcher?: PrefixMatcher;
}

export type CacheModel = "learned" | "static";
