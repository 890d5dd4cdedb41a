// The entrance of the inference routes: the client key check (client-keys.ts) before the body is
// read. A refusal is answered here (401, OpenAI's shape), counted and logged; an admitted request
// leaves with what the balancer needs: the Authorization to pass to an engine (if any) and where to
// count its tokens.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LbConfig } from "@meridian/protocol";
import type { AuthRefusals } from "./auth-refusals";
import { checkClient, type ClientIdentity } from "./client-keys";
import type { ClientMetrics } from "./client-metrics";
import { sendError } from "./errors";
import type { ProxyMetrics } from "./metrics";
import type { UsageReport } from "./sse";
import { coreNow } from "./core-clock";

/** What the balancer carries with an admitted request. */
export interface InferenceClient {
  identity: ClientIdentity;
  /** The client's Authorization, passed to replicas; null when it was a Meridian credential. */
  forwardAuthorization: string | null;
  /** Called once when the request finished, with the status the LB recorded for it (a stream cut
   * after its 200 head is a 502, as in the LB's counters and telemetry) and the usage the engine
   * reported (if any). */
  onFinished(status: number, usage: UsageReport | null): void;
}

export interface EntranceDeps {
  config: LbConfig;
  refusals: AuthRefusals;
  metrics: Pick<ProxyMetrics, "requests" | "rejected">;
  clientMetrics: ClientMetrics;
}

/** 1 when a peer LB forwarded the request here (x-meridian-hop), else 0. */
export function hopOf(req: IncomingMessage): number {
  const header = req.headers["x-meridian-hop"];
  return typeof header === "string" && Number(header) >= 1 ? 1 : 0;
}

/** The admitted client, or null after answering the refusal. */
export function admitClient(req: IncomingMessage, res: ServerResponse, path: string, deps: EntranceDeps): InferenceClient | null {
  const check = checkClient(req.headers["authorization"], hopOf(req), deps.config, undefined, req.headers["x-meridian-client-keyed"] === "1");
  if (!check.ok) {
    // Drain the body so the connection stays usable for the client's next (corrected) request.
    req.resume();
    const address = req.socket.remoteAddress ?? "unknown";
    deps.refusals.record("client", check.reason, { address, path, ...(check.keyId ? { keyId: check.keyId } : {}) }, coreNow());
    deps.metrics.rejected.inc({ reason: "invalid_api_key" });
    deps.metrics.requests.inc({ policy: deps.config.policy, replica: "none", status: String(check.error.status) });
    sendError(res, check.error);
    return null;
  }
  const { identity, forwardAuthorization } = check;
  let counted = false;
  const count = (status: number): void => {
    if (counted) return;
    counted = true;
    deps.clientMetrics.request(identity, status);
  };
  // A request refused before the balancer took it (a bad body, an unknown model) ends with the
  // response alone: its status is the one sent.
  res.once("close", () => count(res.writableFinished ? res.statusCode : 499));
  return {
    identity,
    forwardAuthorization,
    onFinished: (status, usage) => {
      count(status);
      deps.clientMetrics.usage(identity, usage?.promptTokens ?? null, usage?.completionTokens ?? null);
    },
  };
}
