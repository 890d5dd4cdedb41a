// GET /metrics: the console's Prometheus metrics (src/server/metrics/console-metrics.ts) with the
// Node process metrics. Readable from the console's host, or from anywhere with
// `Authorization: Bearer $MERIDIAN_METRICS_TOKEN` (src/server/auth/metrics-access.ts).
import "server-only";
import { getEnv } from "../../src/env";
import { requireMetricsAccess } from "../../src/server/auth/metrics-access";
import { requestSecurityFromEnv } from "../../src/server/auth/request-security";
import { getRuntime } from "../../src/server/runtime/global";

export const dynamic = "force-dynamic";

export async function GET(req: Request): Promise<Response> {
  const rt = await getRuntime({ start: true });
  const refused = await requireMetricsAccess(rt, req, { token: getEnv().MERIDIAN_METRICS_TOKEN, security: requestSecurityFromEnv() });
  if (refused) return refused;
  const { text, contentType } = await rt.metrics.render();
  return new Response(text, { status: 200, headers: { "content-type": contentType, "cache-control": "no-store" } });
}
