// tRPC endpoint (GET queries, POST mutations); see src/server/trpc/handler.ts.
import "server-only";
import { requestSecurityFromEnv } from "../../../../src/server/auth/request-security";
import { getRuntime } from "../../../../src/server/runtime/global";
import { handleTrpcRequest } from "../../../../src/server/trpc/handler";

export const dynamic = "force-dynamic";

async function handler(req: Request): Promise<Response> {
  return handleTrpcRequest(await getRuntime({ start: true }), req, { security: requestSecurityFromEnv() });
}

export { handler as GET, handler as POST };
