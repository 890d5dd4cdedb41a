// Per-client-key metrics: requests by status and tokens by kind, labelled by the key's public id and
// name (never the secret). Label values come only from the config (key ids and names, peer ids) and
// two fixed words ("anonymous", "peer"), never from a request, so the series are bounded by the
// config; series of a key that left the config (revoked) are removed when the config changes.
// They live on a registry of their own, apart from the LB's: GET /metrics renders them only for a
// caller trusted with them (metrics-access.ts), since they name every client and its traffic.
import { Counter, Registry } from "prom-client";
import type { LbConfig } from "@meridian/protocol";
import type { ClientIdentity } from "./client-keys";

type Labels = { key_id: string; key_name: string };

export class ClientMetrics {
  /** Only these two counters: appended to the LB's scrape for a trusted caller. */
  readonly registry = new Registry();
  private readonly requests: Counter<"key_id" | "key_name" | "status">;
  private readonly tokens: Counter<"key_id" | "key_name" | "kind">;
  /** Label sets written, by key id, so a removed key's series can be dropped exactly. */
  private readonly written = new Map<string, { statuses: Set<string>; names: Set<string> }>();
  /** The keys and peers of the config in force (null: every identity, before the first config change
   * is seen). A request of a key revoked while it ran is not counted: it would bring the key's series
   * back until the next config change. */
  private configured: { keys: Map<string, string>; peers: Set<string> } | null = null;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({
      name: "meridian_lb_client_requests_total",
      help: "Inference requests by client API key (key_id anonymous: none; peer: forwarded by the peer LB in key_name) and HTTP status.",
      labelNames: ["key_id", "key_name", "status"],
      registers,
    });
    this.tokens = new Counter({
      name: "meridian_lb_client_tokens_total",
      help: "Tokens by client API key, as the engines reported them (kind prompt or completion).",
      labelNames: ["key_id", "key_name", "kind"],
      registers,
    });
  }

  request(identity: ClientIdentity, status: number): void {
    if (!this.isConfigured(identity.keyId, identity.keyName)) return;
    const labels = this.labels(identity);
    const statusLabel = String(status);
    this.track(identity).statuses.add(statusLabel);
    this.requests.inc({ ...labels, status: statusLabel });
  }

  usage(identity: ClientIdentity, promptTokens: number | null, completionTokens: number | null): void {
    if (!this.isConfigured(identity.keyId, identity.keyName)) return;
    const labels = this.labels(identity);
    this.track(identity);
    if (promptTokens !== null && promptTokens > 0) this.tokens.inc({ ...labels, kind: "prompt" }, promptTokens);
    if (completionTokens !== null && completionTokens > 0) this.tokens.inc({ ...labels, kind: "completion" }, completionTokens);
  }

  /** Drops the series of keys (and peers) the new config no longer has. */
  retainConfigured(config: LbConfig): void {
    this.configured = { keys: new Map(config.clientAuth.keys.map((key) => [key.id, key.name])), peers: new Set(config.peers.map((peer) => peer.id)) };
    for (const [keyId, written] of this.written) {
      for (const name of [...written.names]) {
        if (this.isConfigured(keyId, name)) continue;
        for (const status of written.statuses) this.requests.remove({ key_id: keyId, key_name: name, status });
        for (const kind of ["prompt", "completion"]) this.tokens.remove({ key_id: keyId, key_name: name, kind });
        written.names.delete(name);
      }
      if (written.names.size === 0) this.written.delete(keyId);
    }
  }

  private isConfigured(keyId: string, name: string): boolean {
    const configured = this.configured;
    if (configured === null || keyId === "anonymous") return true;
    return keyId === "peer" ? configured.peers.has(name) : configured.keys.get(keyId) === name;
  }

  private labels(identity: ClientIdentity): Labels {
    return { key_id: identity.keyId, key_name: identity.keyName };
  }

  private track(identity: ClientIdentity): { statuses: Set<string>; names: Set<string> } {
    let written = this.written.get(identity.keyId);
    if (!written) {
      written = { statuses: new Set(), names: new Set() };
      this.written.set(identity.keyId, written);
    }
    written.names.add(identity.keyName);
    return written;
  }
}
