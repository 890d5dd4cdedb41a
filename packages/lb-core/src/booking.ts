// What a request waiting on its target was booked on, against what is configured now: a replica or
// peer can be re-pointed, removed or put back while requests wait on it. One URL is one endpoint
// (targets.ts sameEndpoint). A driver asks both before it moves a stalled request (redispatch.ts).
import { type PeerRecord, type ReplicaRecord, sameEndpoint } from "./targets";
import type { Target } from "./ticket";

/** The records a config has made, by id. */
export interface ConfiguredTargets {
  readonly replicas: ReadonlyMap<string, ReplicaRecord>;
  readonly peers: ReadonlyMap<string, PeerRecord>;
}

/** False when the target's replica or peer was re-pointed to a new URL (or removed) since it was booked. */
export function onCurrentEndpoint(target: Target | null, configured: ConfiguredTargets): boolean {
  if (target === null) return true;
  if (target.kind === "peer") return target.peer === null || sameEndpoint(target.peer, configured.peers.get(target.id));
  return target.record === null || sameEndpoint(target.record, configured.replicas.get(target.id));
}

/** Whether the endpoint the target was booked on is down: its replica failed its probes, or its peer
 * has no fresh report. Judged on the record now configured for that endpoint; a record re-pointed or
 * removed since is no longer probed or polled, so it stays as it was (a replica) or goes stale (a peer). */
export function bookedEndpointDown(target: Target | null, configured: ConfiguredTargets, now: number, peerPollIntervalMs: number): boolean {
  if (target === null) return false;
  const current = onCurrentEndpoint(target, configured);
  if (target.kind === "peer") {
    const peer = current ? configured.peers.get(target.id) : target.peer;
    return !peer?.freshReport(now, peerPollIntervalMs);
  }
  const record = current ? configured.replicas.get(target.id) : target.record;
  return record === undefined || record === null || !record.healthy;
}
