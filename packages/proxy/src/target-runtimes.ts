// Keeps one ReplicaRuntime per replica and one PeerRuntime per peer in step with the LB core's
// targets: the core decides which targets a config adds and removes (an id that went or a URL that
// changed); this starts and stops their I/O accordingly.
import type { LbConfig } from "@meridian/protocol";
import type { TargetChanges } from "@meridian/lb-core";
import { PeerRuntime, type PeerObservation } from "./peers";
import { ReplicaRuntime, type ReplicaObservation } from "./replicas";
import type { ProcessSettings } from "./settings";

export interface TargetObservers {
  region(): string;
  /** Block keys to ask each peer for in its prefix snapshot. */
  snapshotKeys(): number;
  replica(replicaId: string, observation: ReplicaObservation): void;
  peer(peerId: string, observation: PeerObservation): void;
}

export class TargetRuntimes {
  readonly replicas = new Map<string, ReplicaRuntime>();
  readonly peers = new Map<string, PeerRuntime>();
  /** Removed targets whose requests in flight are still finishing: a shutdown ends them too. */
  private readonly retiring = new Set<ReplicaRuntime | PeerRuntime>();

  constructor(
    private readonly settings: ProcessSettings,
    /** This LB's peer credentials, newest first. */
    private readonly peerCredentials: () => string[],
    private readonly observers: TargetObservers,
  ) {}

  /** Starts I/O for added targets and stops it for removed ones; resolves once every added target
   * answered its first probe, scrape or poll, or after `withinMs` when given. At startup (`initial`)
   * every peer is polled at once; a peer added by a config change is first polled one interval later
   * (PeerRuntime.start). */
  apply(config: LbConfig, changes: TargetChanges, options: { initial: boolean; withinMs?: number }): Promise<void> {
    const started = this.startAndStop(config, changes, options.initial);
    const withinMs = options.withinMs;
    if (withinMs === undefined) return started;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)));
    return Promise.race([started, waited]).finally(() => clearTimeout(timer));
  }

  private startAndStop(config: LbConfig, changes: TargetChanges, initial: boolean): Promise<void> {
    for (const record of [...changes.removedReplicas]) {
      const runtime = this.replicas.get(record.id);
      this.replicas.delete(record.id);
      if (runtime) this.retire(runtime);
    }
    for (const record of changes.removedPeers) {
      const runtime = this.peers.get(record.id);
      this.peers.delete(record.id);
      if (runtime) this.retire(runtime);
    }
    const starts: Promise<void>[] = [];
    for (const replicaConfig of config.replicas) {
      const existing = this.replicas.get(replicaConfig.id);
      if (existing) {
        existing.config = replicaConfig;
        existing.updateProbes(config.probes);
        existing.updateLimits(config.limits);
        continue;
      }
      const runtime = new ReplicaRuntime(replicaConfig, this.observers.region, config.probes, config.limits, this.observers.replica);
      this.replicas.set(runtime.id, runtime);
      starts.push(runtime.start());
    }
    for (const peerConfig of config.peers) {
      const existing = this.peers.get(peerConfig.id);
      if (existing) {
        existing.config = peerConfig;
        existing.updateLimits(config.limits);
        continue;
      }
      const runtime = new PeerRuntime(
        peerConfig,
        this.peerCredentials,
        this.settings.peerPollIntervalMs,
        this.observers.snapshotKeys,
        this.observers.peer,
        config.limits,
      );
      this.peers.set(runtime.id, runtime);
      starts.push(runtime.start(initial ? "now" : "next-interval"));
    }
    return Promise.all(starts).then(() => undefined);
  }

  /** A removed target stops taking requests; those in flight on it finish (a stream is not cut
   * because a config push dropped its replica or moved it to a new URL). */
  private retire(runtime: ReplicaRuntime | PeerRuntime): void {
    this.retiring.add(runtime);
    void runtime.retire().then(() => this.retiring.delete(runtime));
  }

  /** Shutdown, after the balancer has ended what it still served: everything stops at once. */
  async close(): Promise<void> {
    const runtimes = [...this.replicas.values(), ...this.peers.values(), ...this.retiring];
    this.retiring.clear();
    await Promise.all(runtimes.map((runtime) => runtime.close()));
  }
}
