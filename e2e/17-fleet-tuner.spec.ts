// The fleet scope on the tuner page: an operator switches to one tuner for the whole fleet, starts it,
// sees its trial on every LB and samples from the demo's traffic in both arms; an LB's own tuner page
// says the fleet's sets its weights; switching back hands each LB its own (stopped) tuner.
import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { fleetTrialInBothArms, loginViaApi, screenshot, trpcMutation, trpcQuery, useTuningScope, type LbRow } from "./helpers";

interface TunerState {
  running: boolean;
  scope: "lb" | "fleet";
  trial: { id: string; samples: { incumbent: number; candidate: number } } | null;
}

/** The trial of the newest config the LB acknowledged (the console's record; 13-credentials.spec.ts
 * rotated one LB's admin token, so its admin API is not asked directly). */
async function acknowledgedTrial(request: Parameters<typeof trpcQuery>[0], lbId: string): Promise<string | null> {
  const lb = await trpcQuery<{ ackedVersion: number | null; configs: { version: number; config: { trial?: { id: string } } }[] }>(request, "lbs.byId", {
    id: lbId,
  });
  return lb.configs.find((c) => c.version === lb.ackedVersion)?.config.trial?.id ?? null;
}

// The spec switches the scope from per LB and back, and then leaves the demo's scope as it was.
test.afterEach(async ({ page }) => useTuningScope(page.request, "fleet"));

test("one tuner for the fleet: its trial runs on every LB and the LBs' own tuners stand aside until the scope is switched back", async ({ page }, testInfo) => {
  test.setTimeout(180_000);
  await loginViaApi(page, OPERATOR);
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");
  await useTuningScope(page.request, "lb");

  await page.goto("/tuner");
  await expect(page.getByTestId("tuner-scope")).toHaveText("per LB");
  // The switch says what it will do to the LBs before it is clicked.
  await expect(page.getByTestId("tuner-scope-help")).toContainText(/Stops every LB's own tuner/);
  await page.getByTestId("tuner-scope-switch").click();
  await page.getByTestId("tuner-scope-switch-confirm").click();
  await expect(page.getByTestId("tuner-scope")).toHaveText("fleet");
  // The fleet's tuner is what the page shows first while it is on.
  await expect(page.getByTestId("tuner-lb-select")).toHaveValue("*");
  await page.getByTestId("tuner-trial-look").fill("10");
  await page.getByTestId("tuner-trial-cap").fill("120");
  await page.getByTestId("tuner-settings-submit").click();
  await expect(page.getByTestId("tuner-settings-ok")).toHaveText("Saved.");
  await page.getByTestId("tuner-start").click();
  await expect(page.getByTestId("tuner-running")).toHaveText("running");

  // Every LB runs the trial the page shows, and the demo's traffic fills both arms.
  const trialId = (await page.getByTestId("tuner-trial-id").textContent())?.trim().split(" ")[0];
  expect(trialId).toMatch(/^\d+-[0-9a-f]{8}$/);
  for (const lb of lbs) {
    // The fleet's trial of the moment (it moves on as trials are decided, one push per 5 s at most).
    await expect
      .poll(async () => (await acknowledgedTrial(page.request, lb.id)) === (await trpcQuery<TunerState>(page.request, "tuner.fleet")).trial?.id, {
        timeout: 30_000,
      })
      .toBe(true);
  }
  await fleetTrialInBothArms(page.request);
  await screenshot(page, testInfo, "tuner-fleet");

  // An LB's own tuner says who sets its weights, and the server refuses to start it.
  await page.getByTestId("tuner-lb-select").selectOption(lbs[0]!.id);
  await expect(page.getByTestId("tuner-fleet-owns")).toBeVisible();
  const refused = await trpcMutation(page.request, "tuner.start", { lbId: lbs[0]!.id });
  expect(refused.status).toBe(412);
  expect(refused.error?.message).toMatch(/fleet tuner sets the weights of every LB/);
  // A request that names two tuners, or none, is refused with what to send instead.
  for (const input of [{ lbId: lbs[0]!.id, fleet: true }, {}]) {
    const ambiguous = await trpcMutation(page.request, "tuner.stop", input);
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.error?.message).toMatch(/name one tuner: lbId, or fleet: true/);
  }

  // Back to one tuner per LB: the fleet's trial leaves the LBs, and each LB's tuner is its own again.
  await page.getByTestId("tuner-scope-switch").click();
  await page.getByTestId("tuner-scope-switch-confirm").click();
  await expect(page.getByTestId("tuner-scope")).toHaveText("per LB");
  await expect(page.getByTestId("tuner-fleet-owns")).toHaveCount(0);
  await expect(page.getByTestId("tuner-running")).toHaveText("stopped");
  for (const lb of lbs) await expect.poll(async () => acknowledgedTrial(page.request, lb.id), { timeout: 20_000 }).toBeNull();
  expect((await trpcQuery<TunerState>(page.request, "tuner.byLb", { lbId: lbs[0]!.id })).scope).toBe("lb");
});
