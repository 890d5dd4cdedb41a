// SkyLB two-layer routing: when every local replica is full, an LB in via-peer mode forwards to a
// peer LB with an available replica (x-meridian-hop: 1), and a forwarded request is never forwarded
// again. Also: peers share their in-flight tokens so LBs don't herd.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { LbState, PeerReport } from "@meridian/protocol";
import { parsePrometheusText, type RunningProxy } from "../src/index";
import { deriveLbKey } from "@meridian/protocol/credentials";
import { scrapeWithClientSeries } from "./client-series";
import { adminGet, chatBody, MODEL, post, TOKEN, waitFor } from "./helpers";
import { fillReplicas, startViaPeerRegions, type ViaPeerRegions } from "./via-peer-regions";

let regions: ViaPeerRegions;
let lbUs: RunningProxy;
let lbEu: RunningProxy;

before(async () => {
  regions = await startViaPeerRegions();
  ({ lbUs, lbEu } = regions);
});
after(async () => {
  await regions?.close();
});

test("the peer report carries in-flight tokens, availability and the queue length", async () => {
  const report = await adminGet<PeerReport>(lbUs, "/admin/peer?snapshot=100");
  assert.equal(report.lbId, "lb-us");
  assert.equal(report.availableReplicas, 1);
  assert.deepEqual(report.availableByModel, { [MODEL]: 1 }, "a peer forwards only requests for a model this LB serves");
  assert.equal(report.queueLength, 0);
  assert.deepEqual(
    report.replicas.map((r) => r.id),
    ["us-1"],
  );
  const unauthorised = await request(`${lbUs.url}/admin/peer`);
  assert.equal(unauthorised.statusCode, 401);
  await unauthorised.body.dump();
});

test("forwards to a peer LB when every local replica is full", async () => {
  const filling = await fillReplicas(lbUs, "us");
  // lb-us's in-flight tokens on us-1 reach lb-eu (no herding) ...
  const report = await adminGet<PeerReport>(lbUs, "/admin/peer");
  assert.ok((report.replicas[0]?.inFlightTokens ?? 0) > 0);
  // ... and lb-eu learns us-1 is unavailable through lb-us's report.
  await waitFor("lb-eu sees lb-us unavailable", async () => {
    const state = await adminGet<LbState>(lbEu, "/admin/state");
    return state.peers[0]?.availableReplicas === 0 ? true : undefined;
  });
  const euSeq = lbEu.balancer.telemetry.latestSeq;
  const forwarded = await post(`${lbUs.url}/v1/chat/completions`, chatBody("please forward me"));
  assert.equal(forwarded.status, 200, forwarded.text);
  // lb-eu's event names where the request entered and how that LB routed it (a fleet tuner that does
  // not hold lb-us's events samples this one).
  const served = await waitFor("lb-eu's event of the forward", () => lbEu.balancer.telemetry.since(euSeq)[0]);
  assert.deepEqual([served.hop, served.entryLbId, served.entryPolicy], [1, "lb-us", lbUs.balancer.config.policy]);
  assert.equal(forwarded.headers["x-meridian-forwarded-to"], "lb-eu");
  assert.equal(forwarded.headers["x-meridian-replica"], "eu-1");
  const us = await adminGet<LbState>(lbUs, "/admin/state");
  assert.equal(us.totals.forwarded, 1);
  // lb-us sent its read-only peer credential with the forwarded request, and lb-eu counted it as lb-us's.
  const euMetrics = parsePrometheusText(await scrapeWithClientSeries(lbEu));
  const byPeer = euMetrics.samples.find((s) => s.name === "meridian_lb_client_requests_total" && s.labels.key_id === "peer");
  assert.equal(byPeer?.labels.key_name, "lb-us");
  assert.equal(byPeer?.value, 1);
  await Promise.all(filling);
});

test("a forwarded request (hop 1) is never forwarded again: it waits in the receiving LB's queue", async () => {
  const filling = await fillReplicas(lbEu, "eu");
  // lb-us has a free replica and reports it, yet lb-eu must not send a hop-1 request back.
  await waitFor("lb-us idle", async () => {
    const state = await adminGet<LbState>(lbUs, "/admin/state");
    return state.replicas.every((r) => !r.full) ? true : undefined;
  });
  const usBefore = await adminGet<LbState>(lbUs, "/admin/state");
  // As lb-us forwards it: hop 1 counts only from a peer its credential identifies.
  const asLbUs = { authorization: `Bearer ${deriveLbKey(TOKEN).peerCredential}`, "x-meridian-hop": "1" };
  const result = await post(`${lbEu.url}/v1/chat/completions`, chatBody("already forwarded once"), asLbUs);
  assert.equal(result.status, 200, result.text);
  assert.equal(result.headers["x-meridian-replica"], "eu-1");
  assert.equal(result.headers["x-meridian-forwarded-to"], undefined);
  const eu = await adminGet<LbState>(lbEu, "/admin/state");
  assert.equal(eu.totals.forwarded, 0);
  assert.ok(eu.totals.queued >= 1);
  const usAfter = await adminGet<LbState>(lbUs, "/admin/state");
  assert.equal(usAfter.totals.requests, usBefore.totals.requests);
  await Promise.all(filling);
});
