// GET /api/entrypoints: {"<region>": "http://lb-url"} for replay clients. Accepts the machine bearer
// token (MERIDIAN_LB_TOKEN) or a logged-in session. A region whose LB is failed maps to the nearest
// healthy LB; a region with no healthy LB at all is left out (its clients get no dead URL), which
// the console logs and shows as an alarm (src/server/runtime/entrypoint-resolver.ts).
import "server-only";
import { requireTokenOrSession } from "../../../src/server/auth/api-access";
import { requestSecurityFromEnv } from "../../../src/server/auth/request-security";
import { json } from "../../../src/server/http";
import { getRuntime } from "../../../src/server/runtime/global";
import { entrypointMap } from "../../../src/server/services/lbs";

export const dynamic = "force-dynamic";

export function GET(req: Request): Response {
  const rt = getRuntime({ start: true });
  const refused = requireTokenOrSession(rt, req, { security: requestSecurityFromEnv() });
  if (refused) return refused;
  const map = Object.fromEntries(Object.entries(entrypointMap(rt)).flatMap(([region, entry]) => (entry.url === null ? [] : [[region, entry.url]])));
  return json(map);
}
