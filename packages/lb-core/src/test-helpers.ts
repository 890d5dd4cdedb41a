// For tests (named test-helpers.ts, as the boundary rules expect of test code): an LB core as most
// of them want it, built and probed in one place. Not part of the package's API (index.ts does not
// export it).
import { parseLbConfig, type LbConfigInput } from "@meridian/protocol";
import type { Outcome } from "./completion";
import { LbCore } from "./lb-core";
import type { LbCoreOptions } from "./lb-core-options";

/** A replica `id` in region us serving model m, at http://<id>.test/; `extra` overrides any field. */
export const testReplica = (id: string, extra: Record<string, unknown> = {}) => ({ id, url: `http://${id}.test/`, region: "us", model: "m", ...extra });

/** lb-us in region us, policy least-request, replicas a and b, unless `config` says otherwise; seed 1;
 * every replica probed healthy at 1 ms. */
export function testCore(config: Partial<LbConfigInput> = {}, options: Partial<Omit<LbCoreOptions, "config">> = {}): LbCore<string> {
  const lb = new LbCore<string>({
    config: parseLbConfig({
      schema: "meridian.lb-config/1",
      version: 1,
      lbId: "lb-us",
      region: "us",
      policy: "least-request",
      replicas: [testReplica("a"), testReplica("b")],
      ...config,
    }),
    seed: 1,
    peerPollIntervalMs: 1_000,
    ...options,
  });
  for (const id of lb.replicas.keys()) lb.probeSucceeded(id, 1);
  return lb;
}

/** A served answer whose usage reports `promptTokens`, `cachedTokens` of them cached. */
export const servedWithUsage = (promptTokens: number, cachedTokens: number | null): Outcome => ({
  status: 200,
  error: null,
  usage: { promptTokens, completionTokens: 1, cachedTokens },
  reply: "",
  outputEvents: 1,
  ttftMs: 1,
  e2eMs: 2,
});
