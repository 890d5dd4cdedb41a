import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcQuery, type ReplicaRow } from "./helpers";

test.beforeEach(async ({ page }) => {
  await loginViaApi(page, OPERATOR);
});

type CachePoint = { t: number; replicas: Record<string, { predicted: number; actual: number }> };

test("the replicas page shows each LB index's accuracy and predicted vs reported cached tokens over time", async ({ page }, testInfo) => {
  // The demo's multi-turn traffic needs a few turns before the engines report cached tokens.
  await expect
    .poll(async () => (await trpcQuery<CachePoint[]>(page.request, "replicas.cacheHistory")).some((p) => Object.keys(p.replicas).length > 0), {
      timeout: 60_000,
      intervals: [1000],
    })
    .toBe(true);
  const replicas = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
  await page.goto("/replicas");
  for (const r of replicas) await expect(page.getByTestId(`replica-index-${r.name}`)).toBeVisible();
  await expect(page.locator('[data-testid^="chart-cache-"] .recharts-line').first()).toBeVisible();
  await screenshot(page, testInfo, "replicas-cache-truth");
});

test("a replica whose engine cache is flushed behind the LB stands out", async ({ page }, testInfo) => {
  const replicas = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
  // Every engine is flushed, not one chosen replica: which replica an LB's returning sessions land on
  // moves with the tuner's trials and with what earlier specs did to the fleet, and a replica the
  // serving LB sends no returning session has nothing for its index to get wrong. With every cache
  // emptied, each LB's next returning sessions meet an empty engine wherever it sends them.
  for (const r of replicas) {
    const flushed = await page.request.post(`${r.url.replace(/\/$/, "")}/flush_cache`);
    expect(flushed.ok(), `flush ${r.name}`).toBeTruthy();
  }
  let flagged: ReplicaRow | undefined;
  await expect
    .poll(
      async () => {
        const rows = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
        flagged = rows.find((r) => /^(cleared|collapsed|drifting)$/.test(r.index.kind));
        return flagged?.index.kind ?? rows.map((r) => `${r.name}: ${r.index.kind}`).join(", ");
      },
      { timeout: 60_000, intervals: [1000] },
    )
    .toMatch(/^(cleared|collapsed|drifting)$/);
  await page.goto("/replicas");
  await expect(page.getByTestId(`replica-index-${flagged!.name}`).locator(".badge")).toBeVisible();
  await screenshot(page, testInfo, "replicas-flushed");
});
