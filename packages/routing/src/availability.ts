// SkyLB selective pushing: which candidates may take a request now, or whether to forward it to a
// peer LB, or hold it in this LB's queue.

import { RoutingInputError, describe, requireFiniteNumber, requireNonNegative } from "./errors";
import type { PrefixIndex } from "./prefix-index";
import type { BlockKey, CandidateView, CrossRegionMode } from "./types";

export const DEFAULT_PEER_QUEUE_TAU = 4;

/** What this LB knows about a peer LB from its last heartbeat. */
export interface PeerView {
  id: string;
  region: string;
  /** EWMA RTT from this LB to the peer LB, in ms. */
  rttMs: number;
  /** Peer's replicas that are not full. */
  availableReplicas: number;
  /** Requests waiting in the peer LB's own queue. */
  queueLength: number;
}

export interface FullnessInput {
  /** Waiting requests at the last scrape; null/undefined before the first scrape. */
  waiting: number | null | undefined;
  /** This LB's in-flight requests on the replica. */
  inFlight: number;
  /** Running requests the replica was last seen to admit (its effective batch limit); null if unknown. */
  admittedConcurrency: number | null | undefined;
}

/**
 * SkyLB's full rule: the engine reported waiting requests at the last scrape, or this LB alone has
 * already reached the concurrency the replica was last seen to admit.
 */
export function isReplicaFull(input: FullnessInput): boolean {
  if (input === null || typeof input !== "object") throw new RoutingInputError("input", `must be an object, got ${describe(input)}`);
  const inFlight = requireNonNegative("inFlight", input.inFlight);
  if (input.waiting !== null && input.waiting !== undefined && requireNonNegative("waiting", input.waiting) > 0) return true;
  const admitted = input.admittedConcurrency;
  if (admitted === null || admitted === undefined) return false;
  requireNonNegative("admittedConcurrency", admitted);
  // 0 admitted means we never saw it run anything: no evidence of a limit yet.
  return admitted > 0 && inFlight >= admitted;
}

export interface AdmittedConcurrencyInput {
  /** The limit learned so far; null before any scrape showed one. */
  previous: number | null;
  /** The scrape: requests the engine was running, and holding waiting. */
  running: number;
  waiting: number;
  /** This LB's in-flight requests on the replica when the scrape arrived. */
  inFlight: number;
}

/** How much a limit that held back an engine with room grows per scrape: an eighth, at least one. */
const ADMITTED_GROWTH = 1 / 8;

/**
 * The concurrency a replica admits, learned from its scrapes (additive growth, reset on evidence):
 * - a scrape with waiting requests shows the batch the engine admitted while it turned work away:
 *   the limit is what was running (SkyLB's rule);
 * - a scrape with nothing waiting, the engine running at least the limit and this LB holding the
 *   replica at it shows the engine had room the limit did not use: the limit grows by an eighth (at
 *   least one). (Running below the limit proves nothing: the scrape may predate the dispatches.) Without this, a limit
 *   learned on a transient (a scrape that caught requests waiting for the engine's next step)
 *   capped the replica for good: the LB never let it run more, so no later scrape could show more.
 *   Growing past the engine's real limit costs at most one scrape interval: the next scrape shows
 *   waiting requests and sets the limit back to what ran.
 */
export function admittedConcurrencyAfterScrape(input: AdmittedConcurrencyInput): number | null {
  const running = requireNonNegative("running", input.running);
  const waiting = requireNonNegative("waiting", input.waiting);
  const inFlight = requireNonNegative("inFlight", input.inFlight);
  if (waiting > 0 && running > 0) return running;
  const previous = input.previous;
  if (previous === null || previous <= 0) return previous;
  if (waiting === 0 && running >= previous && inFlight >= previous) return previous + Math.max(1, Math.floor(previous * ADMITTED_GROWTH));
  return previous;
}

export interface AvailabilityInput {
  mode: CrossRegionMode;
  /** `via-peer`: this LB's local replicas. `direct`: every candidate replica, all regions. */
  local: readonly CandidateView[];
  peers: readonly PeerView[];
  /** 0 for a client request; ≥ 1 when a peer forwarded it here (x-meridian-hop). */
  hop: number;
  /** A peer with a queue longer than tau is not available. Default 4. */
  tau?: number;
  /** Snapshot index holding peers' REMOTE routes (under the peer ids), to prefer the warmest peer. */
  index?: PrefixIndex;
  keys?: readonly BlockKey[];
  now?: number;
}

export type AvailabilityDecision =
  | { action: "route"; candidates: CandidateView[] }
  | { action: "forward"; peerId: string; reason: string }
  | { action: "queue"; reason: string };

function routable(c: CandidateView): boolean {
  return c.healthy === true && c.full !== true;
}

export function decideAvailability(input: AvailabilityInput): AvailabilityDecision {
  if (input === null || typeof input !== "object") throw new RoutingInputError("input", `must be an object, got ${describe(input)}`);
  const { mode, local, peers } = input;
  if (mode !== "direct" && mode !== "via-peer") throw new RoutingInputError("mode", `must be "direct" or "via-peer", got ${describe(mode)}`);
  if (!Array.isArray(local)) throw new RoutingInputError("local", `must be an array, got ${describe(local)}`);
  if (!Array.isArray(peers)) throw new RoutingInputError("peers", `must be an array, got ${describe(peers)}`);
  const hop = requireNonNegative("hop", input.hop);
  const tau = requireNonNegative("tau", input.tau ?? DEFAULT_PEER_QUEUE_TAU);

  for (let i = 0; i < local.length; i++) {
    const c = local[i] as CandidateView;
    if (c === null || typeof c !== "object" || typeof c.id !== "string" || c.id.length === 0) {
      throw new RoutingInputError(`local[${i}].id`, "must be a candidate with a non-empty string id");
    }
  }
  const ready = local.filter(routable);
  if (ready.length > 0) return { action: "route", candidates: ready };
  if (mode === "direct") {
    return { action: "queue", reason: local.length === 0 ? "no candidate replica" : "every candidate replica is full or unhealthy" };
  }
  if (hop >= 1) return { action: "queue", reason: "all local replicas full; request was already forwarded once (hop >= 1)" };

  const available: PeerView[] = [];
  for (let i = 0; i < peers.length; i++) {
    const peer = peers[i] as PeerView;
    if (peer === null || typeof peer !== "object" || typeof peer.id !== "string" || peer.id.length === 0) {
      throw new RoutingInputError(`peers[${i}].id`, "must be a non-empty string");
    }
    const availableReplicas = requireNonNegative(`peers[${i}].availableReplicas`, peer.availableReplicas);
    const queueLength = requireNonNegative(`peers[${i}].queueLength`, peer.queueLength);
    requireNonNegative(`peers[${i}].rttMs`, peer.rttMs);
    if (availableReplicas >= 1 && queueLength <= tau) available.push(peer);
  }
  if (available.length === 0) return { action: "queue", reason: "all local replicas full and no peer LB is available" };

  const depth = new Map<string, number>();
  if (input.index && input.keys && input.keys.length > 0) {
    const now = requireFiniteNumber("now", input.now);
    const match = input.index.match(
      input.keys,
      now,
      available.map((p) => p.id),
    );
    for (const [id, d] of match.depthByReplica) depth.set(id, d);
  }
  // Longest snapshot match, then lowest RTT, then id: deterministic for identical inputs.
  available.sort((a, b) => (depth.get(b.id) ?? 0) - (depth.get(a.id) ?? 0) || a.rttMs - b.rttMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const best = available[0] as PeerView;
  const matched = depth.get(best.id) ?? 0;
  return {
    action: "forward",
    peerId: best.id,
    reason: `all local replicas full; peer ${best.id} (${best.region}) has ${best.availableReplicas} available, queue ${best.queueLength}, snapshot match ${matched} blocks, rtt ${best.rttMs} ms`,
  };
}
