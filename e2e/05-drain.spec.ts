import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcQuery, type ReplicaRow } from "./helpers";

test("draining a replica takes its share to zero, and enabling it brings traffic back", async ({ page }, testInfo) => {
  test.setTimeout(150_000);
  await loginViaApi(page, OPERATOR);
  const replicas = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
  // The busiest replica: its share falling to zero is the least ambiguous signal.
  const target = [...replicas].sort((a, b) => b.share - a.share)[0]!;
  expect(target.share).toBeGreaterThan(0);

  await page.goto("/replicas");
  await page.getByTestId(`replica-drain-${target.name}`).click();
  await expect(page.getByTestId(`replica-state-${target.name}`)).toHaveText("draining");
  await expect(page.getByTestId(`replica-drain-${target.name}`)).toHaveCount(0);

  // Share is a rolling window, so it decays to zero once no new request is routed to the replica.
  await expect
    .poll(async () => (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list")).find((r) => r.id === target.id)?.share, {
      timeout: 120_000,
      intervals: [2000],
    })
    .toBe(0);
  await expect(page.getByTestId(`replica-share-${target.name}`)).toHaveAttribute("data-share", "0.0000");
  await screenshot(page, testInfo, "replicas-drained");

  await page.getByTestId(`replica-enable-${target.name}`).click();
  await expect(page.getByTestId(`replica-state-${target.name}`)).toHaveText("enabled");
  await expect
    .poll(async () => (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list")).find((r) => r.id === target.id)?.share ?? 0, {
      timeout: 60_000,
      intervals: [2000],
    })
    .toBeGreaterThan(0);
});
