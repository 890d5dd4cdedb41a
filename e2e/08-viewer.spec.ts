import { expect, test } from "@playwright/test";
import { BASE_URL, VIEWER } from "./env";
import { loginViaApi, screenshot, trpcMutation, trpcQuery, type LbRow, type ReplicaRow } from "./helpers";

test.beforeEach(async ({ page }) => {
  await loginViaApi(page, VIEWER);
});

test("a viewer sees every page without mutation controls", async ({ page }, testInfo) => {
  await page.goto("/");
  await expect(page.getByTestId("current-role")).toHaveText("viewer");
  await expect(page.locator('[data-testid^="region-card-"]')).toHaveCount(3);

  await page.goto("/replicas");
  await expect(page.locator('[data-testid^="replica-row-"]').first()).toBeVisible();
  await expect(page.getByTestId("readonly-note")).toBeVisible();
  await expect(page.locator('[data-testid^="replica-drain-"], [data-testid^="replica-delete-"], [data-testid="replica-add-toggle"]')).toHaveCount(0);
  await screenshot(page, testInfo, "viewer-replicas");

  await page.goto("/lbs");
  await expect(page.locator('[data-testid^="lb-row-"]').first()).toBeVisible();
  await expect(
    page.locator(
      '[data-testid^="lb-failover-"], [data-testid^="lb-failback-"], [data-testid^="lb-policy-apply-"], [data-testid^="lb-delete-"], [data-testid="lb-add-toggle"]',
    ),
  ).toHaveCount(0);

  await page.goto("/tuner");
  await expect(page.getByTestId("tuner-mode")).toBeVisible();
  await expect(page.locator('[data-testid="tuner-start"], [data-testid="tuner-manual-form"], [data-testid="tuner-settings-form"]')).toHaveCount(0);
  await expect(page.getByTestId("tuner-settings-readonly")).toBeVisible();
  await screenshot(page, testInfo, "viewer-tuner");

  await page.goto("/regions");
  await expect(page.getByTestId("region-table")).toBeVisible();
  await expect(page.locator('[data-testid="region-create-form"], [data-testid^="region-delete-"]')).toHaveCount(0);

  await page.goto("/experiments");
  await expect(page.getByTestId("experiment-list")).toBeVisible();
  await expect(page.getByTestId("experiment-form")).toHaveCount(0);
});

test("a viewer's direct tRPC mutations are FORBIDDEN", async ({ page }) => {
  const replica = (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list"))[0]!;
  const lb = (await trpcQuery<LbRow[]>(page.request, "lbs.list"))[0]!;

  const drain = await trpcMutation(page.request, "replicas.setState", { id: replica.id, state: "draining" });
  expect(drain.status).toBe(403);
  expect(drain.error?.data?.code).toBe("FORBIDDEN");

  const failover = await trpcMutation(page.request, "lbs.failover", { id: lb.id });
  expect(failover.error?.data?.code).toBe("FORBIDDEN");

  // The same refusal from inside the page, with the browser's own headers and cookie.
  await page.goto("/replicas");
  const fromBrowser = await page.evaluate(
    async ({ id, base }) => {
      const res = await fetch(`${base}/api/trpc/tuner.start`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ json: { lbId: id } }),
      });
      return { status: res.status, body: (await res.json()) as { error?: { json?: { data?: { code?: string } } } } };
    },
    { id: lb.id, base: BASE_URL },
  );
  expect(fromBrowser.status).toBe(403);
  expect(fromBrowser.body.error?.json?.data?.code).toBe("FORBIDDEN");

  // Nothing changed.
  const after = (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list")).find((r) => r.id === replica.id)!;
  expect(after.state).toBe(replica.state);
});
