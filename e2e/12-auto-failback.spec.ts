// Issue 13 item 6 and issue 15 item 6: a dead demo LB is restarted by the demo fleet, the console
// fails it over while it is down and fails it back on its own once it has answered for the healthy
// period (MERIDIAN_AUTO_FAILBACK_AFTER_S, set in playwright.config.ts), as a system action.
// 06-failover.spec.ts covers the operator's manual failover and failback, which this does not touch.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { AUTO_FAILBACK_AFTER_S, DEMO_BASE_PORT, OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcQuery, type Entrypoints, type LbRow } from "./helpers";

interface AuditRow {
  actor: string;
  action: string;
  target: string;
  after: { healthyForMs?: number } | null;
}
type LbRowWithFailback = LbRow & { failedOverAutomatically: boolean; autoFailbackAt: number | null };

/** The PID the demo fleet wrote for one of its processes (scripts/lib/pid-files.ts). */
function fleetPid(name: string): number {
  const dataDir = process.env.MERIDIAN_E2E_DATA_DIR;
  if (!dataDir) throw new Error("MERIDIAN_E2E_DATA_DIR is unset; run through playwright.config.ts");
  return Number(readFileSync(join(dataDir, `demo-${DEMO_BASE_PORT}`, `${name}.pid`), "utf8").split("\n")[0]);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

test("a dead LB is restarted by the demo fleet, failed over while down and failed back automatically after the healthy period", async ({ page }, testInfo) => {
  test.setTimeout(180_000);
  await loginViaApi(page, OPERATOR);
  const lbs = async () => trpcQuery<LbRowWithFailback[]>(page.request, "lbs.list");
  const lb = (await lbs()).filter((l) => l.state === "healthy" && l.replicas.length > 0).at(-1)!;
  const ownedBefore = [...lb.replicas].sort();
  const pid = fleetPid(lb.id);

  // Frozen first, so that it stays down long enough for the console's probes to fail it over (a
  // killed LB alone is back within a second, before the third failed probe); then killed.
  signal(pid, "SIGSTOP");
  try {
    await expect.poll(async () => (await lbs()).find((l) => l.id === lb.id)?.state, { timeout: 60_000 }).toBe("failed-over");
  } finally {
    signal(pid, "SIGKILL");
  }
  const failedOver = (await lbs()).find((l) => l.id === lb.id)!;
  expect(failedOver.failedOverAutomatically).toBe(true);
  expect((await trpcQuery<Entrypoints>(page.request, "lbs.entrypoints"))[lb.region]?.lbId).toBe(failedOver.failedOverTo);
  const failover = (await trpcQuery<AuditRow[]>(page.request, "audit.list", { action: "lb.failover.automatic", target: `lb:${lb.id}` }))[0];
  expect(failover?.actor).toBe("system:health-monitor");

  // The fleet restarts it under a new PID; once it answers, the console schedules the failback.
  await expect.poll(() => fleetPid(lb.id), { timeout: 30_000 }).not.toBe(pid);
  await expect.poll(async () => (await lbs()).find((l) => l.id === lb.id)?.autoFailbackAt ?? null, { timeout: 30_000 }).not.toBeNull();
  // The page shows the pending failback (not asserted: the period may end while the page loads).
  await page.goto("/lbs");
  await screenshot(page, testInfo, "load-balancers-auto-failback-pending");

  // Failed back by the system, after answering for the whole healthy period.
  await expect.poll(async () => (await lbs()).find((l) => l.id === lb.id)?.state, { timeout: 60_000 }).toBe("healthy");
  const failback = (await trpcQuery<AuditRow[]>(page.request, "audit.list", { action: "lb.failback", target: `lb:${lb.id}` }))[0];
  expect(failback?.action).toBe("lb.failback.automatic");
  expect(failback?.actor).toBe("system:health-monitor");
  expect(failback?.after?.healthyForMs ?? 0).toBeGreaterThanOrEqual(AUTO_FAILBACK_AFTER_S * 1000);
  await expect.poll(async () => (await trpcQuery<Entrypoints>(page.request, "lbs.entrypoints"))[lb.region]?.lbId).toBe(lb.id);
  await expect.poll(async () => [...(await lbs()).find((l) => l.id === lb.id)!.replicas].sort()).toEqual(ownedBefore);
  await expect(page.getByTestId(`lb-state-${lb.name}`)).not.toHaveText("failed-over");
  await expect(page.getByTestId(`entrypoint-lb-${lb.region}`)).toHaveText(lb.name);
});
