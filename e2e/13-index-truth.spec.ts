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
  // The busiest replica: its LB predicts hits on it, so the flush shows within a few requests.
  const target = [...replicas].sort((a, b) => b.share - a.share)[0]!;
  const flushed = await page.request.post(`${target.url.replace(/\/$/, "")}/flush_cache`);
  expect(flushed.ok()).toBeTruthy();
  await expect
    .poll(
      async () => {
        const row = (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list")).find((r) => r.id === target.id);
        return row?.index.kind;
      },
      { timeout: 60_000, intervals: [1000] },
    )
    .toMatch(/^(cleared|collapsed|drifting)$/);
  await page.goto("/replicas");
  await expect(page.getByTestId(`replica-index-${target.name}`).locator(".badge")).toBeVisible();
  await screenshot(page, testInfo, "replicas-flushed");
});
