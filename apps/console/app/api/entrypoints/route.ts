// GET /api/entrypoints: {"<region>": "http://lb-url"} for replay clients. Accepts the machine bearer
// token (MERIDIAN_LB_TOKEN) or a logged-in session.
import "server-only";
import { resolveSession, tokenFromCookieHeader } from "../../../src/server/auth/session-store";
import { hasBearer, json, jsonError } from "../../../src/server/http";
import { getRuntime } from "../../../src/server/runtime/global";
import { entrypointMap } from "../../../src/server/services/lbs";

export const dynamic = "force-dynamic";

export function GET(req: Request): Response {
  const rt = getRuntime({ start: true });
  const authorised = hasBearer(req, rt.options.lbToken) || resolveSession(rt.db, tokenFromCookieHeader(req.headers.get("cookie"))) !== null;
  if (!authorised) return jsonError(401, "a bearer token or a session is required");
  const map = Object.fromEntries(Object.entries(entrypointMap(rt)).map(([region, entry]) => [region, entry.url]));
  return json(map);
}
