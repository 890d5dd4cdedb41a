// Issue 15 item 1: the entrypoint map never hands out a dead LB. An LB added at an address nothing
// listens on is the only LB of its new region; once its probes fail, /api/entrypoints (what clients
// read) and the console's entrypoint map send that region's clients to a healthy LB of another
// region, and the LBs page shows the fallback as an alarm. Cleans up after itself.
import { expect, test } from "@playwright/test";
import { DEMO_BASE_PORT, LB_TOKEN, OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcMutation, trpcQuery, type Entrypoints, type LbRow } from "./helpers";

const REGION = "e2e-dead-lb-region";
const LB_NAME = "lb-e2e-dead";
// In the e2e port range, and nothing listens there (the demo uses BASE+1..BASE+13).
const DEAD_URL = `http://127.0.0.1:${DEMO_BASE_PORT + 97}`;

test("a region whose only LB is dead resolves to a healthy LB of another region, with an alarm", async ({ page }, testInfo) => {
  await loginViaApi(page, OPERATOR);
  expect((await trpcMutation(page.request, "regions.create", { name: REGION })).status).toBe(200);
  const created = await trpcMutation<{ id: string }>(page.request, "lbs.create", { name: LB_NAME, url: DEAD_URL, region: REGION });
  expect(created.status).toBe(200);
  const deadId = created.data!.id;
  try {
    const healthyUrls = (await trpcQuery<LbRow[]>(page.request, "lbs.list")).filter((lb) => lb.id !== deadId && lb.state === "healthy").map((lb) => lb.url);

    // What a client reads: the region maps to a live LB's URL, never to the dead one.
    await expect
      .poll(
        async () => {
          const res = await page.request.get("/api/entrypoints", { headers: { authorization: `Bearer ${LB_TOKEN}` } });
          return ((await res.json()) as Record<string, string>)[REGION] ?? null;
        },
        { timeout: 30_000 },
      )
      .not.toBeNull();
    const map = (await (await page.request.get("/api/entrypoints", { headers: { authorization: `Bearer ${LB_TOKEN}` } })).json()) as Record<string, string>;
    expect(map[REGION]).not.toBe(DEAD_URL);
    expect(healthyUrls).toContain(map[REGION]);

    const entry = (await trpcQuery<Entrypoints>(page.request, "lbs.entrypoints"))[REGION]!;
    expect(entry.assignedLbId).toBe(deadId);
    expect(entry.status).toBe("fallback");
    expect(entry.lbId).not.toBe(deadId);

    await page.goto("/lbs");
    await expect(page.getByTestId(`entrypoint-${REGION}`)).toHaveAttribute("data-status", "fallback");
    await expect(page.getByTestId(`entrypoint-alarm-${REGION}`)).toContainText(LB_NAME);
    await expect(page.getByTestId(`lb-state-${LB_NAME}`)).not.toHaveText("healthy");
    await screenshot(page, testInfo, "entrypoint-fallback");
  } finally {
    expect((await trpcMutation(page.request, "lbs.delete", { id: deadId })).status).toBe(200);
    expect((await trpcMutation(page.request, "regions.delete", { id: REGION })).status).toBe(200);
  }
});
