// When a request that has not yet sent a byte to its client may leave its target for another one.
//
// An upstream's answer says whose fault it is. 502, 503 and 504 are about the target's capacity or
// its path (a gateway, an overloaded or restarting engine): another replica may well serve the same
// body, so the request moves. Any other 5xx — 500 above all — is the engine's answer to this body:
// an engine whose handler crashed on a poison request crashes on it again elsewhere, so the request
// is not sent to a second replica and the client gets the first one's answer. The LB's own request
// validation (the proxy's openai-shape.ts) is the first guard against such bodies; this is the
// second. A refused or reset connection is a dead target, not an answer: it moves (the LB cannot tell
// an engine that a body killed from one that was killed, and at most one more replica is tried).
//
// A request that outlived its first-byte deadline (deadline.ts) moves only to a target that can take
// it now: a routable local replica that is not full, or a peer whose free replicas are not all taken
// by what this LB forwarded to it that its last report cannot show (PeerRecord.peerView). Moved into
// the hold queue it would leave its first replica excluded for good and could only wait for the
// others: when they stay full it is refused (503 queue_timeout) although its first replica, freed by
// the move itself, might have answered. And a peer's report alone would not do: every request whose
// deadline passed before the peer's next report would go to the one free replica it reported, and be
// refused there with no try left. The retry that moves it (LbCore.retry, cause "deadline" or
// "timeout") is placed with the same count, so of two peers it takes the one whose free replica no
// forward has taken. With no such target it keeps waiting where it is, and its driver asks again
// whenever capacity may have freed (the proxy's in-flight.ts), so it moves once a target can take it,
// up to limits.headersTimeoutMs. At that cap (cause "timeout") the LB gives up on that replica's
// answer anyway: the request then moves to a target that can take it now (by the same count), or
// into the hold queue while it has room. Off an unhealthy replica it moves to any target that serves
// it, held if need be, or refused: there it would get no answer, and a refusal now is better than a
// timeout later.
import type { LbConfig } from "@meridian/protocol";
import { decideAvailability, type CandidateView, type PeerView } from "@meridian/routing";
import { isLocalCandidate, peersConsidered } from "./placement";
import { type PeerRecord, type ReplicaRecord, sameEndpoint } from "./targets";
import type { Ticket } from "./ticket";

/** Statuses after which the same body is worth trying on another target. */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/** Why a request that has not answered would leave its target: its first-byte deadline passed (the
 * target may still answer), limits.headersTimeoutMs passed (the LB stops waiting for that answer), or
 * the target turned unhealthy (it will not answer). */
export type RedispatchCause = "deadline" | "timeout" | "unhealthy";

/**
 * Whether the ticket should leave its current target for another (redispatch rule above).
 * `queueHasRoom`: whether the hold queue could take it if no target can at once (read for "timeout").
 */
export function hasAlternative(
  ticket: Ticket<unknown>,
  config: LbConfig,
  replicas: readonly ReplicaRecord[],
  peers: ReadonlyMap<string, PeerRecord>,
  peerPollIntervalMs: number,
  now: number,
  cause: RedispatchCause,
  queueHasRoom: boolean,
): boolean {
  const target = ticket.target;
  // The endpoint it waits on is no alternative; a replica or peer re-pointed since (the same id, a new
  // URL, often the operator's fix for a stuck engine) is one, as LbCore.retry places it there.
  const waitsOn = (kind: "replica" | "peer", record: ReplicaRecord | PeerRecord): boolean => {
    if (target?.kind !== kind || target.id !== record.id) return false;
    const booked = kind === "replica" ? target.record : target.peer;
    return booked === null || sameEndpoint(booked, record);
  };
  const local: CandidateView[] = [];
  for (const r of replicas) if (!waitsOn("replica", r) && isLocalCandidate(r, ticket, config)) local.push(r.candidateView(now, config.probes));
  const others: PeerView[] = [];
  if (peersConsidered(ticket, config)) {
    for (const peer of peers.values()) {
      if (waitsOn("peer", peer) || ticket.isExcluded(peer.id)) continue;
      // Past its deadline (or at the cap, where no answer came) a peer's replica counts only while free.
      const view = peer.peerView(now, peerPollIntervalMs, ticket, cause !== "unhealthy");
      if (view) others.push(view);
    }
  }
  if (local.length === 0 && others.length === 0) return false;
  if (cause === "unhealthy" || (cause === "timeout" && queueHasRoom)) return true;
  try {
    // The availability rule that places a request, with the current target left out.
    const availability = decideAvailability({ mode: config.crossRegion, local, peers: others, hop: ticket.hop, tau: config.limits.peerQueueTau, now });
    return availability.action !== "queue";
  } catch {
    // A record availability refuses to read cannot be counted on: the request stays where it is.
    return false;
  }
}
