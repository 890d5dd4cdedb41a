// Values the e2e web server is started with and the specs log in or call LBs with. Shared by
// playwright.config.ts and the specs so the two cannot drift apart.
// MERIDIAN_E2E_PORT_OFFSET shifts every port, so two checkouts on one machine can run e2e at once.
const offset = Number(process.env.MERIDIAN_E2E_PORT_OFFSET ?? 0);
if (!Number.isInteger(offset) || offset < 0 || offset > 20_000) {
  throw new Error(`MERIDIAN_E2E_PORT_OFFSET must be an integer in [0, 20000], got ${process.env.MERIDIAN_E2E_PORT_OFFSET}`);
}
export const CONSOLE_PORT = 3100 + offset;
export const DEMO_BASE_PORT = 4700 + offset;
export const BASE_URL = `http://127.0.0.1:${CONSOLE_PORT}`;

export const OPERATOR = { username: "admin", password: "e2e-operator-pass-1" } as const;
export const VIEWER = { username: "viewer", password: "e2e-viewer-pass-1" } as const;
export const LB_TOKEN = "e2e-lb-token-0123456789";
/** The console's automatic failback period in the e2e run (the demo default is 30 s). */
export const AUTO_FAILBACK_AFTER_S = 10;
