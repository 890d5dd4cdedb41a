import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcQuery, type LbRow, type ReplicaRow } from "./helpers";

test.beforeEach(async ({ page }) => {
  await loginViaApi(page, OPERATOR);
});

test("the overview shows three regions whose replicas all carry traffic", async ({ page }, testInfo) => {
  await page.goto("/");
  const regionCards = page.locator('[data-testid^="region-card-"]');
  await expect(regionCards).toHaveCount(3);
  for (const card of await regionCards.all()) {
    await expect(card.locator('[data-testid^="overview-lb-"]').first()).toBeVisible();
    await expect(card.locator('[data-testid^="overview-replica-"]').first()).toBeVisible();
  }

  // The demo load generator needs a few seconds before every replica has served a request.
  await expect
    .poll(
      async () => {
        const replicas = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
        return replicas.length > 0 && replicas.every((r) => r.share > 0);
      },
      { timeout: 60_000, intervals: [1000] },
    )
    .toBe(true);
  await expect.poll(async () => Number((await page.getByTestId("stat-rps").textContent())?.replace(/,/g, "")), { timeout: 30_000 }).toBeGreaterThan(0);
  await expect(page.locator('[data-testid="chart-ttft"] .recharts-line').first()).toBeVisible();
  // The TTFT stats come from a complete bucket, dated; every LB's telemetry stream is open.
  await expect(page.getByTestId("stat-ttft-p95-age")).toContainText("ended");
  for (const lb of await trpcQuery<LbRow[]>(page.request, "lbs.list")) {
    await expect(page.getByTestId(`overview-telemetry-stream-${lb.name}`)).toHaveText("connected");
  }
  await screenshot(page, testInfo, "overview");
});

test("the replicas, load balancers and regions pages render the live fleet", async ({ page }, testInfo) => {
  const replicas = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");

  await page.goto("/replicas");
  await expect(page.locator('[data-testid^="replica-row-"]')).toHaveCount(replicas.length);
  for (const r of replicas) {
    await expect(page.getByTestId(`replica-health-${r.name}`)).toHaveText("healthy");
  }
  await expect(page.locator('[data-testid="chart-share-history"] .recharts-area').first()).toBeVisible();
  await screenshot(page, testInfo, "replicas");

  await page.goto("/lbs");
  await expect(page.locator('[data-testid^="lb-row-"]')).toHaveCount(lbs.length);
  await expect(page.locator('[data-testid^="entrypoint-"][data-lb-id]')).toHaveCount(3);
  await screenshot(page, testInfo, "load-balancers");

  await page.goto("/regions");
  await expect(page.locator('[data-testid^="region-row-"]')).toHaveCount(3);
  await expect(page.getByTestId("rtt-matrix")).toBeVisible();
  await screenshot(page, testInfo, "regions");
});
