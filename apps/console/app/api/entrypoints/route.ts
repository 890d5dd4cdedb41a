// GET /api/entrypoints: {"<region>": "http://lb-url"} for replay clients. Accepts the machine bearer
// token (MERIDIAN_LB_TOKEN) or a logged-in session.
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
  const map = Object.fromEntries(Object.entries(entrypointMap(rt)).map(([region, entry]) => [region, entry.url]));
  return json(map);
}
