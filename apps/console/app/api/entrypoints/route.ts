// GET /api/entrypoints: {"<region>": "http://lb-url"} for replay clients. Accepts a logged-in
// session, the machine token (MERIDIAN_ENTRYPOINTS_TOKEN) or an active client API key. A region whose
// LB is failed maps to the nearest healthy LB; a region with no healthy LB at all is left out (its
// clients get no dead URL), which the console logs and shows as an alarm
// (src/server/runtime/entrypoint-resolver.ts).
import "server-only";
import { requireTokenOrSession } from "../../../src/server/auth/api-access";
import { requestSecurityFromEnv } from "../../../src/server/auth/request-security";
import { json } from "../../../src/server/http";
import { getRuntime } from "../../../src/server/runtime/global";
import { entrypointMap } from "../../../src/server/services/lbs";

export const dynamic = "force-dynamic";

export async function GET(req: Request): Promise<Response> {
  const rt = await getRuntime({ start: true });
  const refused = await requireTokenOrSession(rt, req, { security: requestSecurityFromEnv() });
  if (refused) return refused;
  const map = Object.fromEntries(Object.entries(await entrypointMap(rt)).flatMap(([region, entry]) => (entry.url === null ? [] : [[region, entry.url]])));
  return json(map);
}
