// POST /api/auth/logout: ends the session and clears the cookie.
import "server-only";
import { handleLogout } from "../../../../src/server/auth/login";
import { requestSecurityFromEnv } from "../../../../src/server/auth/request-security";
import { getRuntime } from "../../../../src/server/runtime/global";

export const dynamic = "force-dynamic";

export async function POST(req: Request): Promise<Response> {
  return handleLogout(await getRuntime({ start: true }), req, { security: requestSecurityFromEnv() });
}
