// What a replica that left the config (or now names another engine, at a new URL) takes with it: its
// part of the LB's index and cache model, and what a stateful policy (the peer routers' prefix trees)
// learned of its cache. A request later routed by the old engine's prefixes would go to an empty one.
import type { CacheTruth, Policy } from "@meridian/routing";
import type { ReplicaRecord } from "./targets";

export function forgetRemovedReplicas(removed: readonly ReplicaRecord[], truth: CacheTruth, policy: Policy): void {
  for (const { id } of removed) {
    truth.removeReplica(id);
    policy.observe?.({ kind: "replica-removed", replicaId: id });
  }
}
