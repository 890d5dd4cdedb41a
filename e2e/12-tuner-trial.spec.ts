// Issue 10's live acceptance: within two minutes of `npm start`, the demo's tuner page shows an A/B
// trial — both arms, their samples, and evidence once the first look is in.
import { expect, test } from "@playwright/test";
import { VIEWER } from "./env";
import { fleetTrialInBothArms, loginViaApi } from "./helpers";

test("the demo's tuner page shows a live A/B trial with samples in both arms", async ({ page }) => {
  test.setTimeout(150_000);
  await loginViaApi(page, VIEWER);
  // The demo tunes the fleet with one tuner (earlier specs that switch scope switch back): its trial
  // runs on every LB and must have samples in both arms within 2 min.
  await fleetTrialInBothArms(page.request);

  await page.goto("/tuner");
  await expect(page.getByTestId("tuner-scope")).toHaveText("fleet");
  await expect(page.getByTestId("tuner-lb-select")).toHaveValue("*");
  await expect(page.getByTestId("tuner-trial")).toBeVisible();
  await expect(page.getByTestId("tuner-trial-id")).toHaveText(/\d+-[0-9a-f]{8}/);
  for (const arm of ["incumbent", "candidate"]) await expect(page.getByTestId(`tuner-trial-arm-${arm}`)).toBeVisible();
  await expect(page.getByTestId("tuner-trial-evidence")).toBeVisible();
});
