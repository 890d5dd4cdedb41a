import { expect, test, type APIRequestContext } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcQuery, type Entrypoints, type LbRow, type ReplicaRow } from "./helpers";

interface ClientLog {
  sent: number;
  ok: number;
  /** Each failed request with the LB its entrypoint lookup named when it was sent. */
  failed: { lbId: string; status: number | string }[];
  byLb: Map<string, number>;
}

/**
 * A small client of one region: it resolves the region's entrypoint from the console before each
 * request, as real clients do, and keeps a few requests in flight while the failover happens.
 */
function startRegionClient(request: APIRequestContext, region: string, model: string, concurrency: number) {
  const log: ClientLog = { sent: 0, ok: 0, failed: [], byLb: new Map() };
  let stopped = false;
  let seq = 0;
  async function worker() {
    while (!stopped) {
      const entry = (await trpcQuery<Entrypoints>(request, "lbs.entrypoints"))[region]!;
      const lbId = entry.lbId ?? "none";
      log.sent += 1;
      try {
        if (entry.url === null) throw new Error("the entrypoint map names no healthy LB for the region");
        const res = await request.post(`${entry.url.replace(/\/$/, "")}/v1/chat/completions`, {
          data: { model, max_tokens: 8, messages: [{ role: "user", content: `e2e failover probe ${seq++}: say hi` }] },
          timeout: 30_000,
        });
        if (res.ok()) {
          log.ok += 1;
          log.byLb.set(lbId, (log.byLb.get(lbId) ?? 0) + 1);
        } else log.failed.push({ lbId, status: res.status() });
      } catch (err) {
        log.failed.push({ lbId, status: (err as Error).message });
      }
    }
  }
  const workers = Array.from({ length: concurrency }, () => worker());
  return {
    log,
    async stop() {
      stopped = true;
      await Promise.all(workers);
    },
  };
}

test("failing an LB over re-homes its replicas and moves its entrypoint without client errors; failback reverses it", async ({ page }, testInfo) => {
  test.setTimeout(180_000);
  await loginViaApi(page, OPERATOR);
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");
  const replicas = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
  const failed = lbs.find((lb) => lb.replicas.length > 0 && !lb.failedOverTo)!;
  const ownedBefore = [...failed.replicas].sort();
  const region = failed.region;
  const model = replicas[0]!.model;
  const entrypointsBefore = await trpcQuery<Entrypoints>(page.request, "lbs.entrypoints");
  expect(entrypointsBefore[region]?.lbId).toBe(failed.id);

  const concurrency = 3;
  const client = startRegionClient(page.request, region, model, concurrency);
  await expect.poll(() => client.log.ok, { timeout: 30_000 }).toBeGreaterThan(3);

  await page.goto("/lbs");
  await page.getByTestId(`lb-failover-${failed.name}`).click();
  await page.getByTestId(`lb-failover-${failed.name}-confirm`).click();
  await expect(page.getByTestId(`lb-state-${failed.name}`)).toHaveText("failed-over");

  // Re-homed: every replica the failed LB owned now belongs to the LB it failed over to.
  const after = (await trpcQuery<LbRow[]>(page.request, "lbs.list")).find((lb) => lb.id === failed.id)!;
  const takeover = after.failedOverTo!;
  expect(takeover).toBeTruthy();
  expect(takeover).not.toBe(failed.id);
  await expect
    .poll(async () => (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list")).filter((r) => ownedBefore.includes(r.id)).map((r) => r.homeLbId))
    .toEqual(ownedBefore.map(() => takeover));
  const takeoverLb = (await trpcQuery<LbRow[]>(page.request, "lbs.list")).find((lb) => lb.id === takeover)!;
  expect(takeoverLb.replicas).toEqual(expect.arrayContaining(ownedBefore));
  await expect(page.getByTestId(`lb-replicas-${takeoverLb.name}`)).toContainText(replicas.find((r) => r.id === ownedBefore[0])!.name);

  // The region's entrypoint moved to the takeover LB, and clients keep being served through it.
  expect((await trpcQuery<Entrypoints>(page.request, "lbs.entrypoints"))[region]?.lbId).toBe(takeover);
  await expect(page.getByTestId(`entrypoint-lb-${region}`)).toHaveText(takeoverLb.name);
  const servedByTakeover = client.log.byLb.get(takeover) ?? 0;
  await expect.poll(() => (client.log.byLb.get(takeover) ?? 0) - servedByTakeover, { timeout: 30_000 }).toBeGreaterThan(5);
  await screenshot(page, testInfo, "load-balancers-failed-over");

  await client.stop();
  // Only requests sent to the failed LB (their entrypoint lookup preceded the move) may error, at
  // most one per client worker: a worker's next lookup already names the takeover LB. Which LB a
  // request went to is recorded, not inferred from wall-clock times.
  const unexpected = client.log.failed.filter((f) => f.lbId !== failed.id);
  expect(unexpected, JSON.stringify(client.log.failed)).toEqual([]);
  expect(client.log.failed.length).toBeLessThanOrEqual(concurrency);

  // Failback reverses both moves.
  await page.getByTestId(`lb-failback-${failed.name}`).click();
  await expect(page.getByTestId(`lb-state-${failed.name}`)).not.toHaveText("failed-over");
  await expect.poll(async () => (await trpcQuery<Entrypoints>(page.request, "lbs.entrypoints"))[region]?.lbId).toBe(failed.id);
  await expect
    .poll(async () => [...(await trpcQuery<LbRow[]>(page.request, "lbs.list")).find((lb) => lb.id === failed.id)!.replicas].sort())
    .toEqual(ownedBefore);
  await expect(page.getByTestId(`entrypoint-lb-${region}`)).toHaveText(failed.name);
});
