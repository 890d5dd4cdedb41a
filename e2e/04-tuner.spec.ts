import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcQuery, type LbRow } from "./helpers";

interface TunerState {
  running: boolean;
  steps: { fitnessP95TtftMs: number | null }[];
}

test("the online tuner produces fitness points", async ({ page }, testInfo) => {
  test.setTimeout(150_000);
  await loginViaApi(page, OPERATOR);
  const lb = (await trpcQuery<LbRow[]>(page.request, "lbs.list"))[0]!;

  await page.goto("/tuner");
  await page.getByTestId("tuner-lb-select").selectOption(lb.id);
  // A small window so a candidate is scored after a few seconds of demo traffic, not minutes.
  await page.getByTestId("tuner-window").fill("16");
  await page.getByTestId("tuner-hop").fill("16");
  await page.getByTestId("tuner-settings-submit").click();
  await expect(page.getByTestId("tuner-settings-error")).toHaveCount(0);
  await expect(page.getByTestId("tuner-window")).toHaveValue("16");

  // A fresh run, so every fitness point counted below was produced after this start.
  await page.getByTestId("tuner-reset").click();
  await expect(page.getByTestId("tuner-steps")).toHaveText("0 (0)");
  await expect(page.getByTestId("tuner-fitness-empty")).toBeVisible();

  await page.getByTestId("tuner-start").click();
  await expect(page.getByTestId("tuner-running")).toHaveText("running");
  await expect(page.getByTestId("tuner-mode")).toHaveText("online");

  await expect
    .poll(async () => (await trpcQuery<TunerState>(page.request, "tuner.byLb", { lbId: lb.id })).steps.filter((s) => s.fitnessP95TtftMs != null).length, {
      timeout: 120_000,
      intervals: [2000],
    })
    .toBeGreaterThanOrEqual(2);
  await expect(page.locator('[data-testid="chart-fitness"] .recharts-scatter-symbol').first()).toBeVisible();
  await expect(page.locator('[data-testid="tuner-step-row"]').first()).toBeVisible();
  await screenshot(page, testInfo, "tuner");

  await page.getByTestId("tuner-stop").click();
  await expect(page.getByTestId("tuner-running")).toHaveText("stopped");
});
