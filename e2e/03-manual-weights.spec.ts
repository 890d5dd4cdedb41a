import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { lbAdmin, loginViaApi, trpcQuery, useTuningScope, type LbRow } from "./helpers";

interface LbAdminState {
  configVersion: number;
  weights: { rtt: number; queue: number };
}

// The demo tunes the fleet with one tuner; this spec is about an LB's own, and leaves the demo as it was.
test.afterEach(async ({ page }) => useTuningScope(page.request, "fleet"));

test("manual weights reach the LB as a new config version", async ({ page }) => {
  await loginViaApi(page, OPERATOR);
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");
  const lb = lbs[0]!;
  await useTuningScope(page.request, "lb");
  const before = await lbAdmin<LbAdminState>(page.request, lb, "/admin/state");

  await page.goto("/tuner");
  await page.getByTestId("tuner-lb-select").selectOption(lb.id);

  // Outside the bounds: the form hints, and the server's refusal is shown next to the button.
  await page.getByTestId("tuner-manual-rtt").fill("500");
  await expect(page.getByTestId("tuner-manual-rtt-hint")).toBeVisible();
  await page.getByTestId("tuner-manual-submit").click();
  await expect(page.getByTestId("tuner-manual-error")).toBeVisible();

  await page.getByTestId("tuner-manual-rtt").fill("0.8");
  await page.getByTestId("tuner-manual-queue").fill("0.2");
  await page.getByTestId("tuner-manual-submit").click();
  await expect(page.getByTestId("tuner-mode")).toHaveText("manual");
  await expect(page.getByTestId("tuner-weight-rtt")).toHaveText("0.800");
  await expect(page.getByTestId("tuner-weight-queue")).toHaveText("0.200");

  // The LB itself, asked with the admin bearer token, must report the pushed version and weights.
  const pushed = (await trpcQuery<LbRow[]>(page.request, "lbs.list")).find((l) => l.id === lb.id)!;
  expect(pushed.configVersion).toBeGreaterThan(before.configVersion);
  await expect
    .poll(async () => lbAdmin<LbAdminState>(page.request, lb, "/admin/state"), { timeout: 20_000 })
    .toMatchObject({ configVersion: pushed.configVersion, weights: { rtt: 0.8, queue: 0.2 } });

  await page.goto("/lbs");
  await expect(page.getByTestId(`lb-version-${lb.name}`)).toContainText(`v${pushed.configVersion} / v${pushed.configVersion}`);
});
