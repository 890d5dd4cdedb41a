// GET /api/health: liveness for scripts and Playwright (no session needed, no details leaked).
import "server-only";
import { sql } from "drizzle-orm";
import { json } from "../../../src/server/http";
import { getRuntime } from "../../../src/server/runtime/global";

export const dynamic = "force-dynamic";

export function GET(): Response {
  try {
    getRuntime({ start: true }).db.get(sql`select 1`);
    return json({ ok: true });
  } catch {
    return json({ ok: false }, 503);
  }
}
