// The placement plan: where one request goes now. Candidates are the replicas that may take it (healthy,
// enabled, serving its model, in this LB's region in `via-peer` mode, not excluded by a failed
// try); peers are the fresh peer reports (`via-peer`, client requests only). SkyLB availability then
// says route, forward or hold, and the policy picks among the routable replicas. Both modes go
// through availability, so `direct` holds a request when every replica is full, as `via-peer` does.
import {
  decideAvailability,
  type CandidateView,
  type Decision,
  type PeerView,
  type Policy,
  type PrefixIndex,
  type PrefixMatcher,
  type Rng,
} from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import type { PeerRecord, ReplicaRecord } from "./targets";
import { failures, type Failure, type Ticket } from "./ticket";
import { triggeredBy } from "./trial";

const COUNTERFACTUAL_RNG: Rng = { next: () => 0 };

export type Placement =
  | { kind: "replica"; replicaId: string; decision: Decision; candidates: readonly CandidateView[] }
  | { kind: "peer"; peerId: string; reason: string }
  | { kind: "hold"; reason: string }
  | { kind: "fail"; failure: Failure };

/** One line of the placement log: what the core decided for a request, with no clock in it, so a
 * proxy run and a simulator run of the same script can be compared line by line. */
export interface PlacementLogEntry {
  lb: string;
  session: string;
  hop: number;
  /** 1 for the first try, 2 for a retry. */
  attempt: number;
  outcome: Placement["kind"];
  /** Replica or peer id; null for hold and fail. */
  target: string | null;
  /** Failure code (queue_full, queue_timeout, no_replica, ...); null otherwise. */
  code: string | null;
  /** Cached prompt tokens the index predicted on the chosen replica; null otherwise. */
  predictedCachedTokens: number | null;
}

/** The log line for one placement of `ticket` (attempt = the try it was made for). */
export function placementLogEntry(lbId: string, ticket: Ticket<unknown>, placement: Placement): PlacementLogEntry {
  const placed = placement.kind === "replica" || placement.kind === "peer";
  return {
    lb: lbId,
    session: ticket.view.sessionKey,
    hop: ticket.hop,
    attempt: ticket.attempts + (placed ? 0 : 1),
    outcome: placement.kind,
    target: placement.kind === "replica" ? placement.replicaId : placement.kind === "peer" ? placement.peerId : null,
    code: placement.kind === "fail" ? placement.failure.code : null,
    predictedCachedTokens: placement.kind === "replica" ? placement.decision.predictedCachedTokens : null,
  };
}

export interface PlacementContext {
  config: LbConfig;
  replicas: ReadonlyMap<string, ReplicaRecord>;
  /** The same records in config order, iterated per plan without an iterator object. */
  replicaList: readonly ReplicaRecord[];
  peers: ReadonlyMap<string, PeerRecord>;
  peerPollIntervalMs: number;
  policy: Policy;
  /** The LB's prefix index (or the simulator's oracle) the policy matches prompts against. */
  index: PrefixMatcher;
  /** SkyLB snapshot index: which peer LB is believed to hold which blocks. */
  peerIndex: PrefixIndex;
  rng: Rng;
  /** Arrays refilled by each plan (a plan runs per request and per queue retry; nothing keeps them). */
  scratchLocal: CandidateView[];
  scratchPeers: PeerView[];
}

/** Decides without side effects on the records; a "hold" may be retried later with no trace left.
 * `freeNow`: peers as PeerRecord.peerView's `freeNow` reads them (a request moving past its deadline). */
export function planPlacement(ctx: PlacementContext, ticket: Ticket<unknown>, now: number, freeNow = false): Placement {
  const { config } = ctx;
  const mode = config.crossRegion;
  const model = ticket.model;
  const local = ctx.scratchLocal;
  local.length = 0;
  const replicas = ctx.replicaList;
  for (let i = 0; i < replicas.length; i++) {
    const r = replicas[i] as ReplicaRecord;
    if (isLocalCandidate(r, ticket, config)) local.push(r.candidateView(now, config.probes));
  }
  const peers = ctx.scratchPeers;
  peers.length = 0;
  if (peersConsidered(ticket, config)) {
    for (const peer of ctx.peers.values()) {
      if (ticket.isExcluded(peer.id)) continue;
      const view = peer.peerView(now, ctx.peerPollIntervalMs, ticket, freeNow);
      if (view) peers.push(view);
    }
  }
  if (local.length === 0 && peers.length === 0) {
    // A retry that found nowhere else to go: waiting would only hold the client until the wait bound.
    if (ticket.excluded !== null && ticket.excluded.size > 0) return { kind: "fail", failure: failures.upstreamExhausted() };
    // Nothing to wait for unless a replica that serves this request is merely unhealthy or full.
    if (!servesModel(ctx.replicas, model)) return { kind: "fail", failure: failures.noReplica() };
  }
  const availability = decideAvailability({
    mode,
    local,
    peers,
    hop: ticket.hop,
    tau: config.limits.peerQueueTau,
    index: ctx.peerIndex,
    keys: ticket.view.keys,
    now,
  });
  if (availability.action === "queue") return { kind: "hold", reason: availability.reason };
  if (availability.action === "forward") {
    if (!ctx.peers.has(availability.peerId)) return { kind: "hold", reason: `peer ${availability.peerId} is gone` };
    // The peer's policy picks its replica, under its own weights: no counterfactual is known here
    // (TicketTrial). A retry that ends here forgets what its first, abandoned replica decided.
    if (ticket.trial !== null) ticket.trial.triggered = null;
    return { kind: "peer", peerId: availability.peerId, reason: availability.reason };
  }
  const decision = ctx.policy.select(ticket.view, availability.candidates, { index: ctx.index, weights: ticket.weights, rng: ctx.rng, now });
  if (ticket.trial !== null && !ctx.policy.usesCostWeights) {
    // Under a policy that does not read the weights both arms route alike, whatever a second call of
    // select() would say: round-robin's would advance its turn, random's would draw another replica.
    ticket.trial.triggered = false;
  } else if (ticket.trial !== null) {
    // The counterfactual uses its own fixed generator: it must not shift the tie-breaks of real decisions.
    const counterfactual = ctx.policy.select(ticket.view, availability.candidates, {
      index: ctx.index,
      weights: ticket.trial.other,
      rng: COUNTERFACTUAL_RNG,
      now,
    });
    ticket.trial.triggered = triggeredBy(decision, counterfactual);
  }
  return { kind: "replica", replicaId: decision.choice, decision, candidates: availability.candidates };
}

/** Whether a replica may take the ticket now: healthy, enabled, serving its model, in this LB's region
 * in `via-peer` mode, and not excluded by a failed try. */
export function isLocalCandidate(r: ReplicaRecord, ticket: Ticket<unknown>, config: LbConfig): boolean {
  if (!r.routable() || ticket.isExcluded(r.id)) return false;
  if (ticket.model !== null && r.config.model !== ticket.model) return false;
  return config.crossRegion !== "via-peer" || r.config.region === config.region;
}

/**
 * What planPlacement's hold-or-go answer depends on besides the fleet's state: the request's model,
 * its hop, whether its client presented a key (a peer whose region requires client keys takes keyed
 * requests only: PeerRecord.peerView) and the targets it has excluded. Any other ticket field that
 * isLocalCandidate or peerView reads belongs here too. Two held requests with the same class are held
 * for the same reason, so once one of them cannot go, the later one need not be planned (LbCore.drain).
 */
export function holdClass(ticket: Ticket<unknown>): string {
  const excluded = ticket.excluded === null || ticket.excluded.size === 0 ? "" : [...ticket.excluded].sort().join("\u0000");
  return `${ticket.model ?? ""}\u0001${ticket.hop}\u0001${ticket.clientKeyed ? 1 : 0}\u0001${excluded}`;
}

/** Peer LBs are candidates in `via-peer` mode, for client requests (hop 0) only. */
export function peersConsidered(ticket: Ticket<unknown>, config: LbConfig): boolean {
  return config.crossRegion === "via-peer" && ticket.hop === 0;
}

function servesModel(replicas: ReadonlyMap<string, ReplicaRecord>, model: string | null): boolean {
  for (const r of replicas.values()) {
    if (r.config.state === "enabled" && (model === null || r.config.model === model)) return true;
  }
  return false;
}

/** Whether any configured replica serves `model` at all (else 404 before anything is admitted). */
export function knownModel(replicas: ReadonlyMap<string, ReplicaRecord>, model: string | null): boolean {
  if (model === null) return true;
  for (const r of replicas.values()) if (r.config.model === model) return true;
  return false;
}
