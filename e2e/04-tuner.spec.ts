import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { lbAdmin, loginViaApi, screenshot, trpcQuery, type LbRow } from "./helpers";

interface TunerState {
  running: boolean;
  trial: { id: string } | null;
  steps: { fitnessP95TtftMs: number | null; decision: string | null; reason: string | null }[];
}

test("the online tuner decides A/B trials on live traffic and shows why", async ({ page }, testInfo) => {
  test.setTimeout(150_000);
  await loginViaApi(page, OPERATOR);
  const lb = (await trpcQuery<LbRow[]>(page.request, "lbs.list"))[0]!;

  await page.goto("/tuner");
  await page.getByTestId("tuner-lb-select").selectOption(lb.id);
  // Small trials so one is decided after a few seconds of demo traffic, not minutes.
  await page.getByTestId("tuner-trial-look").fill("10");
  await page.getByTestId("tuner-trial-cap").fill("20");
  await page.getByTestId("tuner-settings-submit").click();
  await expect(page.getByTestId("tuner-settings-error")).toHaveCount(0);
  await expect(page.getByTestId("tuner-trial-cap")).toHaveValue("20");

  // A fresh run, so every step counted below was produced after this start.
  await page.getByTestId("tuner-reset").click();
  await expect(page.getByTestId("tuner-steps")).toHaveText("0 (0)");
  await expect(page.getByTestId("tuner-fitness-empty")).toBeVisible();

  await page.getByTestId("tuner-start").click();
  await expect(page.getByTestId("tuner-running")).toHaveText("running");
  await expect(page.getByTestId("tuner-mode")).toHaveText("online");

  // The LB itself runs the trial the page shows.
  const trialId = (await page.getByTestId("tuner-trial-id").textContent())?.trim().split(" ")[0];
  expect(trialId).toMatch(/^\d+-[0-9a-f]{8}$/);
  await expect.poll(async () => (await lbAdmin<{ trial?: { id: string } }>(page.request, lb.url, "/admin/state")).trial?.id, { timeout: 20_000 }).toBe(trialId);

  await expect
    .poll(async () => (await trpcQuery<TunerState>(page.request, "tuner.byLb", { lbId: lb.id })).steps.filter((s) => s.decision !== null).length, {
      timeout: 120_000,
      intervals: [2000],
    })
    .toBeGreaterThanOrEqual(2);
  await expect(page.locator('[data-testid="tuner-step-row"]').first()).toBeVisible();
  await expect(page.getByTestId("tuner-step-reason").first()).toContainText(/accept|reject/);
  await expect(page.getByTestId("tuner-trial-last")).toContainText(/Last decision/);
  await screenshot(page, testInfo, "tuner");

  await page.getByTestId("tuner-stop").click();
  await expect(page.getByTestId("tuner-running")).toHaveText("stopped");
  await expect(page.getByTestId("tuner-trial-none")).toBeVisible();
});
