// Playwright e2e against the production console build (`npm test` builds first) plus the demo fleet,
// in the system Chromium. One worker: the specs share one live fleet and act on it in sequence.
import { join } from "node:path";
import { defineConfig } from "@playwright/test";
import { AUTO_FAILBACK_AFTER_S, BASE_URL, CONSOLE_PORT, DATA_DIR, DEMO_BASE_PORT, ENTRYPOINTS_TOKEN, OPERATOR, VIEWER } from "./e2e/env";

const dataDir = DATA_DIR;

export default defineConfig({
  testDir: "./e2e",
  testMatch: "*.spec.ts",
  outputDir: "test-results/e2e",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: !!process.env.CI,
  timeout: 90_000,
  expect: { timeout: 15_000 },
  reporter: process.env.CI ? "list" : [["list"]],
  use: {
    baseURL: BASE_URL,
    viewport: { width: 1440, height: 900 },
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
  },
  webServer: {
    command: "node scripts/start.mjs",
    url: `${BASE_URL}/login`,
    timeout: 180_000,
    reuseExistingServer: false,
    // npm start's own lines ([meridian] …: its steps, its children's exits and restarts) go to the
    // log, so a run whose start-up went wrong says how; LOG_LEVEL below keeps the console's quiet.
    stdout: "pipe",
    stderr: "pipe",
    gracefulShutdown: { signal: "SIGTERM", timeout: 10_000 },
    env: {
      MERIDIAN_PORT: String(CONSOLE_PORT),
      MERIDIAN_DB_PATH: join(dataDir, "meridian.db"),
      MERIDIAN_DEMO: "1",
      MERIDIAN_DEMO_BASE_PORT: String(DEMO_BASE_PORT),
      MERIDIAN_ADMIN_PASSWORD: OPERATOR.password,
      MERIDIAN_VIEWER_PASSWORD: VIEWER.password,
      MERIDIAN_ENTRYPOINTS_TOKEN: ENTRYPOINTS_TOKEN,
      // `npm test` has just built; a second build would only add minutes.
      MERIDIAN_SKIP_BUILD: "1",
      // More demo traffic than the default, so tuner windows fill and shares settle in seconds.
      MERIDIAN_DEMO_RATE: "6",
      // Shorter than the demo's 30 s, so 12-auto-failback.spec.ts waits less; still several probes.
      MERIDIAN_AUTO_FAILBACK_AFTER_S: String(AUTO_FAILBACK_AFTER_S),
      // A rotated LB token's predecessor is retired after 3 s, so 13-credentials.spec.ts sees it through.
      MERIDIAN_LB_TOKEN_GRACE_S: "3",
      LOG_LEVEL: "warn",
    },
  },
});
