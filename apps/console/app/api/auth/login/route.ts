// POST /api/auth/login: JSON or form {username, password[, next]} → session cookie.
import "server-only";
import { handleLogin } from "@/server/auth/login";
import { requestSecurityFromEnv } from "@/server/auth/request-security";
import { getRuntime } from "@/server/runtime/global";

export const dynamic = "force-dynamic";

export function POST(req: Request): Promise<Response> {
  return handleLogin(getRuntime({ start: true }), req, { security: requestSecurityFromEnv() });
}
