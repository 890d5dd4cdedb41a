import { expect, test } from "@playwright/test";
import { OPERATOR, VIEWER } from "./env";
import { loginViaApi, screenshot, trpcQuery } from "./helpers";

interface AuditRow {
  actor: string;
  action: string;
  target: string;
}

// What the earlier specs did as the operator, in audit-action vocabulary (prefix match).
const EXPECTED_ACTIONS = [
  "tuner.set-manual",
  "tuner.update",
  "tuner.reset",
  "tuner.start",
  "tuner.stop",
  "replica.drain",
  "replica.enable",
  "lb.failover",
  "lb.failback",
  "experiment.run",
  "experiment.save",
];

test("the audit page lists every operator action, filterable", async ({ page }, testInfo) => {
  await loginViaApi(page, OPERATOR);
  const rows = await trpcQuery<AuditRow[]>(page.request, "audit.list", { limit: 500 });
  const actions = rows.map((r) => r.action);
  for (const expected of EXPECTED_ACTIONS) {
    expect(actions.includes(expected), `audit has ${expected}: ${[...new Set(actions)].join(", ")}`).toBe(true);
  }
  // The viewer's refused attempts changed nothing: apart from its own logins, the viewer is not in the log.
  expect(rows.filter((r) => r.actor === VIEWER.username && !r.action.startsWith("auth."))).toEqual([]);

  await page.goto("/audit");
  await expect(page.locator('[data-testid="audit-row"]')).toHaveCount(Math.min(rows.length, 500));
  await screenshot(page, testInfo, "audit");

  await page.getByTestId("audit-filter-action").fill("lb.fail");
  await expect(page.locator('[data-testid="audit-row"]')).toHaveCount(2);
  await expect(page.locator('[data-testid="audit-row"][data-action="lb.failover"]')).toHaveCount(1);

  await page.getByTestId("audit-filter-action").fill("");
  await page.getByTestId("audit-filter-actor").fill(OPERATOR.username);
  await expect(page.locator('[data-testid="audit-row"]').first()).toBeVisible();
});
