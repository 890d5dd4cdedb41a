// Values the e2e web server is started with and the specs log in or call LBs with. Shared by
// playwright.config.ts and the specs so the two cannot drift apart.
// MERIDIAN_E2E_PORT_OFFSET shifts every port, so two checkouts on one machine can run e2e at once.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { demoStateDir, demoTokenFile } from "../apps/console/src/lib/demo-files";
const offset = Number(process.env.MERIDIAN_E2E_PORT_OFFSET ?? 0);
if (!Number.isInteger(offset) || offset < 0 || offset > 20_000) {
  throw new Error(`MERIDIAN_E2E_PORT_OFFSET must be an integer in [0, 20000], got ${process.env.MERIDIAN_E2E_PORT_OFFSET}`);
}
export const CONSOLE_PORT = 3100 + offset;
export const DEMO_BASE_PORT = 4700 + offset;
export const BASE_URL = `http://127.0.0.1:${CONSOLE_PORT}`;

export const OPERATOR = { username: "admin", password: "e2e-operator-pass-1" } as const;
export const VIEWER = { username: "viewer", password: "e2e-viewer-pass-1" } as const;
/** The machine token the demo's clients read /api/entrypoints with. */
export const ENTRYPOINTS_TOKEN = "e2e-entrypoints-token-0123456789";

// The run's database directory. `npm test` creates it, passes it in MERIDIAN_E2E_DATA_DIR and removes
// it after the run (scripts/test.mjs). Without it (`npx playwright test`), the first evaluation picks
// a fresh path under the OS temp directory and puts it in the env var, so that the workers, which
// evaluate playwright.config.ts and this file again, agree on it. Only the path is chosen here: the
// console creates the directory with its database (packages/db/src/client.ts), so evaluating the
// config without running it, as knip does in `npm run check:dead`, leaves nothing behind.
// The console writes the demo LBs' tokens beside the database (apps/console/src/lib/demo-files.ts),
// where the specs read them to call an LB's admin API.
process.env.MERIDIAN_E2E_DATA_DIR ||= join(tmpdir(), `meridian-e2e-${randomBytes(6).toString("hex")}`);
export const DATA_DIR = process.env.MERIDIAN_E2E_DATA_DIR;

/** The admin token of a demo LB, as the console issued it. */
export function lbToken(lbId: string): string {
  return readFileSync(demoTokenFile(demoStateDir(join(DATA_DIR, "meridian.db"), DEMO_BASE_PORT), lbId), "utf8").trim();
}
/** The console's automatic failback period in the e2e run (the demo default is 30 s). */
export const AUTO_FAILBACK_AFTER_S = 10;
