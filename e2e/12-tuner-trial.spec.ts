// Issue 10's live acceptance: within two minutes of `npm start`, the demo's tuner page shows an A/B
// trial — both arms, their samples, and evidence once the first look is in.
import { expect, test } from "@playwright/test";
import { VIEWER } from "./env";
import { loginViaApi, trpcQuery, type LbRow } from "./helpers";

interface TunerState {
  trial: { id: string; samples: { incumbent: number; candidate: number }; looks: number } | null;
}

test("the demo's tuner page shows a live A/B trial with samples in both arms", async ({ page }) => {
  test.setTimeout(150_000);
  await loginViaApi(page, VIEWER);
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");
  // Any demo LB will do; the trial must have samples in both arms and at least one look within 2 min.
  let lbId: string | null = null;
  await expect
    .poll(
      async () => {
        for (const lb of lbs) {
          const t = await trpcQuery<TunerState>(page.request, "tuner.byLb", { lbId: lb.id });
          if (t.trial && t.trial.samples.incumbent > 0 && t.trial.samples.candidate > 0) lbId = lb.id;
          if (lbId) return lbId;
        }
        return null;
      },
      { timeout: 120_000, intervals: [2000] },
    )
    .not.toBeNull();

  await page.goto("/tuner");
  await page.getByTestId("tuner-lb-select").selectOption(lbId!);
  await expect(page.getByTestId("tuner-trial")).toBeVisible();
  await expect(page.getByTestId("tuner-trial-id")).toHaveText(/\d+-[0-9a-f]{8}/);
  for (const arm of ["incumbent", "candidate"]) await expect(page.getByTestId(`tuner-trial-arm-${arm}`)).toBeVisible();
  await expect(page.getByTestId("tuner-trial-evidence")).toBeVisible();
});
