// An LB's delete or edit racing a failover or the adoption of its own settings, on PostgreSQL (read
// committed): each must end as if the two had run one after the other. The service's write is held
// (held-writes.ts) until the other side has either committed or is seen waiting for the LB's row
// lock; SQLite serialises write transactions, so these tests run on PostgreSQL only.
import { strict as assert } from "node:assert";
import { after, beforeEach, test } from "node:test";
import { eq } from "drizzle-orm";
import pino from "pino";
import { LB_CONFIG_SCHEMA, parseLbConfig } from "@meridian/protocol";
import { SYSTEM_HEALTH } from "../audit-trail";
import { SettingsAdoption } from "../runtime/lb-settings-adoption";
import { provenLbIds } from "../runtime/lb-proof-rows";
import { type FakeLb, startFakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";
import { holdWrites, waitingFor } from "../testing/held-writes";
import { startTwoRegionFleet } from "../testing/two-region-fleet";
import { createLb, deleteLb, updateLb } from "./lbs";
import { createRegion } from "./regions";

let h: Harness | null = null;
let fakes: FakeLb[] = [];
beforeEach(async () => {
  await h?.close();
  for (const lb of fakes) await lb.close();
  fakes = [];
  h = await createHarness({ autoFailover: false });
});
after(async () => {
  await h?.close();
  for (const lb of fakes) await lb.close();
});

/** `work`'s outcome, or "rolled back" when PostgreSQL chose it as a deadlock's victim. */
const rolledBackOr = (work: Promise<string>): Promise<string> =>
  work.catch((error: unknown) =>
    (error as { cause?: { code?: string } }).cause?.code === "40P01" ? "rolled back" : `refused: ${error instanceof Error ? error.message : String(error)}`,
  );

/** Settles with what happened, so that a refusal can be asserted on like a success. */
const outcome = <T>(work: Promise<T>): Promise<string> =>
  work.then(
    () => "done",
    (error: unknown) => `refused: ${error instanceof Error ? error.message : String(error)}`,
  );

test("an LB deleted while another fails over to it: the failover is refused, nothing is undone", async (t) => {
  if (h!.rt.store.dialect !== "pg") return t.skip("SQLite serialises write transactions");
  fakes = await startTwoRegionFleet(h!, { replicas: { us: ["us-a"], eu: [] } });
  const held = holdWrites(h!.rt.store, "delete");
  const deletion = outcome(deleteLb(Object.create(h!.rt, { store: { value: held.store } }), OPERATOR, { id: "lb-eu" }));
  const { backendPid } = await held.reached; // the delete found that lb-eu serves nothing
  const failover = outcome(h!.rt.failover.failover("lb-us", OPERATOR));
  // One of its row locks (a SELECT … FOR NO KEY UPDATE), for lb-eu's row or behind the config publisher,
  // which waits for lb-eu's row too.
  await waitFor(async () => (await waitingFor(h!.database, backendPid, "select%for no key update%")) > 0, 10_000, "the failover waits for the delete");
  held.release();
  assert.equal(await deletion, "done");
  // Refused either way: lb-eu vanished under its lock, or before it looked for a target.
  assert.match(await failover, /^refused: (load balancer "lb-eu" changed while "lb-us" failed over to it|cannot fail over "lb-us")/);
  const { entrypoints, loadBalancers, replicas } = h!.rt.store.tables;
  const [usA] = await h!.rt.store.db.select().from(replicas).where(eq(replicas.id, "us-a"));
  const [lbUs] = await h!.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-us"));
  const entries = await h!.rt.store.db.select().from(entrypoints);
  assert.deepEqual(
    { servedBy: usA?.rehomedToLbId ?? usA?.homeLbId, lbUs: lbUs?.state, entrypoints: entries.map((e) => `${e.regionId}->${e.lbId}`) },
    { servedBy: "lb-us", lbUs: "healthy", entrypoints: ["us->lb-us"] },
  );
});

test("an LB renamed while its own limits are adopted keeps both", async (t) => {
  if (h!.rt.store.dialect !== "pg") return t.skip("SQLite serialises write transactions");
  // Registered, never probed or pushed: the LB's first probe adopts what it runs.
  await createRegion(h!.rt, OPERATOR, { name: "us" });
  await createLb(h!.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9", region: "us" });
  const { loadBalancers } = h!.rt.store.tables;
  const held = holdWrites(h!.rt.store, "update");
  const edit = outcome(updateLb(Object.create(h!.rt, { store: { value: held.store } }), OPERATOR, { id: "lb-us", name: "lb-us-east" }));
  const { backendPid } = await held.reached; // the edit read the row and is about to write it
  // The LB's first probe: the limits it runs (from its own config file) are adopted.
  const running = parseLbConfig({ schema: LB_CONFIG_SCHEMA, version: 0, lbId: "lb-us", region: "us", limits: { maxBodyBytes: 32 * 1024 * 1024 } });
  const adoption = new SettingsAdoption({
    store: h!.rt.store,
    log: pino({ level: "silent" }),
    actor: SYSTEM_HEALTH,
    readConfig: async () => ({ kind: "config", config: running }),
  });
  const [row] = await h!.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-us"));
  let adopted = false;
  const adopting = adoption.beforePush(row!).then((result) => {
    adopted = true;
    return result.kind;
  });
  await waitFor(async () => adopted || (await waitingFor(h!.database, backendPid)) > 0, 10_000, "the adoption committed or waits for the edit");
  held.release();
  assert.equal(await edit, "done");
  assert.equal(await adopting, "adopted");
  const [after] = await h!.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-us"));
  assert.deepEqual([after?.name, after?.limitsJson], ["lb-us-east", JSON.stringify({ maxBodyBytes: 32 * 1024 * 1024 })]);
});

test("an LB moved to another region while another fails over to it: the failover does not follow it away", async (t) => {
  if (h!.rt.store.dialect !== "pg") return t.skip("SQLite serialises write transactions");
  for (const region of ["us", "eu", "ap"]) await createRegion(h!.rt, OPERATOR, { name: region });
  for (const [name, region] of [
    ["lb-us-b", "us"],
    ["lb-us-a", "us"],
    ["lb-eu", "eu"],
  ] as const) {
    const lb = await startFakeLb({ id: name, region, token: TEST_TOKEN });
    fakes.push(lb);
    await createLb(h!.rt, OPERATOR, { name, url: lb.url, region });
  }
  const rtt = h!.rt.store.tables.observedRtts;
  await h!.rt.store.db.insert(rtt).values({ fromRegion: "us", toRegion: "eu", rttMs: 80, updatedAt: 0 });
  await h!.rt.store.db.insert(rtt).values({ fromRegion: "us", toRegion: "ap", rttMs: 200, updatedAt: 0 });
  await h!.rt.start();
  await h!.rt.health.tick();
  await waitFor(async () => (await provenLbIds(h!.rt.store)).size === 3, 10_000, "every LB proven");
  // lb-us-b, the nearest to us (same region), moves to ap (200 ms) while lb-us-a fails over to it.
  const held = holdWrites(h!.rt.store, "update");
  const move = rolledBackOr(updateLb(Object.create(h!.rt, { store: { value: held.store } }), OPERATOR, { id: "lb-us-b", region: "ap" }).then(() => "done"));
  const { backendPid } = await held.reached; // lb-us-b locked and read, the move about to be written
  // Both lock lb-us-a and lb-us-b, in opposite orders (the move hands us's entrypoint on): when
  // PostgreSQL finds the deadlock it rolls one back, which the routers answer "retry" (trpc/errors.ts).
  const failover = rolledBackOr(h!.rt.failover.failover("lb-us-a", OPERATOR).then((result) => `to ${result.targetLbId}`));
  await waitFor(async () => (await waitingFor(h!.database, backendPid, "select%for no key update%")) > 0, 10_000, "the failover waits for the move");
  held.release();
  const results = { move: await move, failover: await failover };
  // Moved: the failover went to the nearest LB left (lb-eu), or refused, or was rolled back. The move
  // rolled back instead: lb-us-b is still in us, and the failover to it is right.
  const allowed =
    results.move === "done" ? /^(to lb-eu|rolled back|refused: load balancer "lb-us-b" changed while "lb-us-a" failed over to it; try again)$/ : /^to lb-us-b$/;
  assert.match(results.move, /^(done|rolled back)$/);
  assert.match(results.failover, allowed, JSON.stringify(results));
});

test("two LBs of a region deleted at once: the region's entrypoint goes to its third LB, not away with the second", async (t) => {
  if (h!.rt.store.dialect !== "pg") return t.skip("SQLite serialises write transactions");
  await createRegion(h!.rt, OPERATOR, { name: "us" });
  for (const name of ["lb-a", "lb-b", "lb-c"]) await createLb(h!.rt, OPERATOR, { name, url: "http://127.0.0.1:9", region: "us" });
  const usEntrypoint = async () => (await h!.rt.store.db.select().from(h!.rt.store.tables.entrypoints))[0]?.lbId;
  assert.equal(await usEntrypoint(), "lb-a");
  const held = holdWrites(h!.rt.store, "delete");
  const deletingB = outcome(deleteLb(Object.create(h!.rt, { store: { value: held.store } }), OPERATOR, { id: "lb-b" }));
  const { backendPid } = await held.reached; // lb-b locked, found holding no entrypoint
  const deletingA = outcome(deleteLb(h!.rt, OPERATOR, { id: "lb-a" })); // hands us to the first other LB, lb-b
  await waitFor(async () => (await waitingFor(h!.database, backendPid, "select%for no key update%")) > 0, 10_000, "lb-a's delete waits for lb-b");
  held.release();
  assert.deepEqual({ a: await deletingA, b: await deletingB }, { a: "done", b: "done" });
  assert.equal(await usEntrypoint(), "lb-c");
});

test("an LB deleted while the LB its region goes to fails over: the region follows that failover, and comes home at its failback", async (t) => {
  if (h!.rt.store.dialect !== "pg") return t.skip("SQLite serialises write transactions");
  fakes = await startTwoRegionFleet(h!, { replicas: { us: [], eu: [] } });
  await createLb(h!.rt, OPERATOR, { name: "lb-us-0", url: "http://127.0.0.1:9", region: "us" });
  await h!.rt.store.db.update(h!.rt.store.tables.entrypoints).set({ lbId: "lb-us-0" }).where(eq(h!.rt.store.tables.entrypoints.lbId, "lb-us"));
  const held = holdWrites(h!.rt.store, "insert");
  const deleting = outcome(deleteLb(Object.create(h!.rt, { store: { value: held.store } }), OPERATOR, { id: "lb-us-0" }));
  const { backendPid } = await held.reached; // lb-us-0 deleted, lb-us locked and chosen for us
  const failover = outcome(h!.rt.failover.failover("lb-us", OPERATOR));
  await waitFor(async () => (await waitingFor(h!.database, backendPid, "select%for no key update%")) > 0, 10_000, "the failover waits for the delete");
  held.release();
  assert.deepEqual({ deleted: await deleting, failover: await failover }, { deleted: "done", failover: "done" });
  const { entrypoints, loadBalancers } = h!.rt.store.tables;
  const [lbUs] = await h!.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-us"));
  const us = async () => (await h!.rt.store.db.select().from(entrypoints)).find((e) => e.regionId === lbUs?.regionId)?.lbId;
  assert.deepEqual({ us: await us(), reclaims: lbUs?.failedOverEntrypoint }, { us: "lb-eu", reclaims: true });
  await h!.rt.failover.failback("lb-us", OPERATOR);
  assert.equal(await us(), "lb-us");
});
