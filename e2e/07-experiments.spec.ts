import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot } from "./helpers";

test("an offline experiment runs with progress, shows per-policy results and can be saved", async ({ page }, testInfo) => {
  test.setTimeout(150_000);
  await loginViaApi(page, OPERATOR);
  await page.goto("/experiments");
  await expect(page.getByTestId("experiment-trace").locator("option").first()).toBeAttached();

  // A short window keeps the simulator run to seconds.
  await page.getByTestId("experiment-from").fill("0");
  await page.getByTestId("experiment-to").fill("120000");
  await page.getByTestId("experiment-time-scale").fill("2");
  for (const box of await page.locator('[data-testid^="experiment-policy-"]').all()) await box.uncheck();
  await page.getByTestId("experiment-policy-gorgo").check();
  await page.getByTestId("experiment-policy-round-robin").check();
  await page.getByTestId("experiment-run").click();

  await expect(page.getByTestId("experiment-progress")).toBeVisible();
  await expect(page.getByTestId("experiment-run-view")).toHaveAttribute("data-state", "done", { timeout: 120_000 });
  await expect(page.locator('[data-testid^="experiment-result-"]')).toHaveCount(2);
  await expect(page.locator('[data-testid="chart-experiment-latency"] .recharts-bar-rectangle').first()).toBeVisible();

  const name = `e2e gorgo vs rr ${Date.now()}`;
  await page.getByTestId("experiment-save-name").fill(name);
  await page.getByTestId("experiment-save").click();
  await expect(page.getByTestId("experiment-saved")).toBeVisible();
  await expect(page.getByTestId("experiment-list")).toContainText(name);
  await screenshot(page, testInfo, "experiments");
});
