// POST /api/auth/login: JSON or form {username, password[, next]} → session cookie.
import "server-only";
import { handleLogin } from "../../../../src/server/auth/login";
import { requestSecurityFromEnv } from "../../../../src/server/auth/request-security";
import { getRuntime } from "../../../../src/server/runtime/global";

export const dynamic = "force-dynamic";

export async function POST(req: Request): Promise<Response> {
  return handleLogin(await getRuntime({ start: true }), req, { security: requestSecurityFromEnv() });
}
