// GET /api/entrypoints: {"<region>": "http://lb-url"} for replay clients. Accepts the machine bearer
// token (MERIDIAN_LB_TOKEN) or a logged-in session.
import "server-only";
import { requireTokenOrSession } from "@/server/auth/api-access";
import { requestSecurityFromEnv } from "@/server/auth/request-security";
import { json } from "@/server/http";
import { getRuntime } from "@/server/runtime/global";
import { entrypointMap } from "@/server/services/lbs";

export const dynamic = "force-dynamic";

export function GET(req: Request): Response {
  const rt = getRuntime({ start: true });
  const refused = requireTokenOrSession(rt, req, { security: requestSecurityFromEnv() });
  if (refused) return refused;
  const map = Object.fromEntries(Object.entries(entrypointMap(rt)).map(([region, entry]) => [region, entry.url]));
  return json(map);
}
