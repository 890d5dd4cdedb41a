// GET /api/health: liveness for scripts, load balancers in front of the consoles and Playwright (no
// session needed). Says who leads the background duties: `leader.self` is whether this console
// leads, `leader.url` the leader's address as it announced it, `leader.term` the leadership term
// (apps/console/README.md, "Two consoles"). Under `npm start` it also echoes MERIDIAN_START_NONCE as
// `startNonce` (random per run, no secret), so that start.mjs trusts only the console it started.
import "server-only";
import { getEnv } from "../../../src/env";
import { json } from "../../../src/server/http";
import { getRuntime } from "../../../src/server/runtime/global";

export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  try {
    const runtime = await getRuntime({ start: true });
    // A read through the store: a console whose database is unreachable is not healthy.
    const { db, tables } = runtime.store;
    await db.select({ name: tables.consoleLeases.name }).from(tables.consoleLeases).limit(1);
    const view = runtime.leadership.view();
    const startNonce = getEnv().MERIDIAN_START_NONCE;
    return json({ ok: true, leader: { self: view.isLeader, url: view.leaderUrl, term: view.term }, ...(startNonce ? { startNonce } : {}) });
  } catch {
    return json({ ok: false }, 503);
  }
}
