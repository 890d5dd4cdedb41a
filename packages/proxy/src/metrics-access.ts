// Who may read what of GET /metrics. The aggregate series are open: Prometheus scrapes engines and LBs
// without credentials, and they name no client. The per-client-key series (client-metrics.ts) name
// every client API key and its traffic, so they go only to a caller whose bearer the LB trusts for
// them: the metrics token (proxy.metricsToken / MERIDIAN_LB_METRICS_TOKEN) or an LB token this LB
// holds (the console's admin bearer, admin-auth.ts). No Authorization header at all is the ordinary
// scrape and gets the aggregate series; a header that carries no trusted bearer is refused (401), so
// a scraper configured with a wrong or stale token finds out instead of silently losing the series.
// Digests are compared in constant time, against every candidate, with no early exit (admin-auth.ts).
import type { LbConfig } from "@meridian/protocol";
import { bearerOf, digestsEqual, sha256 } from "@meridian/protocol/credentials";
import { identifyCaller } from "./admin-auth";
import type { RefusalReason } from "./auth-refusals";
import type { LbCredentials } from "./lb-credentials";

export type MetricsReader = { kind: "aggregate" } | { kind: "clients" } | { kind: "refused"; reason: Extract<RefusalReason, "missing" | "invalid"> };

export interface MetricsTrust {
  /** SHA-256 of the metrics token, or null when none is configured. */
  metricsTokenDigest: Buffer | null;
  credentials: LbCredentials;
  config: LbConfig;
}

/** SHA-256 of the configured metrics token (null: none), computed once at startup. */
export function metricsTokenDigest(token: string | null): Buffer | null {
  return token === null ? null : sha256(token);
}

/** What the caller's `Authorization` header lets it read of GET /metrics. */
export function metricsReader(authorization: string | undefined, trust: MetricsTrust): MetricsReader {
  if (authorization === undefined || authorization.trim() === "") return { kind: "aggregate" };
  const bearer = bearerOf(authorization);
  // Both checks always run, so the answer's timing does not say which credential came close.
  const caller = identifyCaller(authorization, trust.credentials, trust.config);
  const isMetricsToken = bearer !== null && trust.metricsTokenDigest !== null && digestsEqual(sha256(bearer), trust.metricsTokenDigest);
  if (isMetricsToken || caller.kind === "console") return { kind: "clients" };
  // A peer LB's credential reads GET /admin/peer, not the client series: one more wrong bearer here.
  return { kind: "refused", reason: caller.kind === "none" ? caller.reason : "invalid" };
}
