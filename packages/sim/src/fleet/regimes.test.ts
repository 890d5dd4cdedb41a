import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace } from "@meridian/workload";
import { buildSimRequests, busyButClears, busyLoadProblem, globalFleet, LOAD_STEP, paperFleet, scalePrompts, shiftClientMix, type SimRequest } from "./index";

const spec = globalFleet();
const rowsPromise = loadTrace(bundledTracePath(), { toMs: 60_000 });

async function workloadAt(scale: number): Promise<SimRequest[]> {
  const rows = (await rowsPromise).map((r) => ({ ...r, timestampMs: r.timestampMs * scale }));
  return buildSimRequests(rows, spec).requests;
}

test("scalePrompts makes every prompt 1/20 as long, at least one block, and keeps each conversation's session and region", async () => {
  const original = await workloadAt(1);
  const short = scalePrompts(original, 0.05);
  assert.equal(short.length, original.length);
  for (let i = 0; i < original.length; i++) {
    const [o, s] = [original[i]!, short[i]!];
    assert.equal(s.inputTokens, Math.max(o.tokensPerBlock, Math.round(o.inputTokens * 0.05)));
    assert.equal(s.keys.length, Math.ceil(s.inputTokens / s.tokensPerBlock));
    assert.deepEqual(s.keys, o.keys.slice(0, s.keys.length), "the prefix chain is cut, not changed");
    assert.equal(s.sessionKey, o.sessionKey);
    assert.equal(s.clientRegion, o.clientRegion);
  }
  assert.ok(new Set(short.map((r) => r.sessionKey)).size > 10, "one-block prompts still belong to many sessions");
  assert.throws(() => scalePrompts(original, 0), /positive/);
});

test("shiftClientMix moves the client mix from the shift on, and a conversation stays in one region after it", async () => {
  const requests = await workloadAt(1);
  const at = requests[Math.floor(requests.length / 2)]!.arrivalMs;
  const shifted = shiftClientMix(requests, at, { "us-ashburn": 1 });
  for (let i = 0; i < requests.length; i++) {
    if (requests[i]!.arrivalMs < at) assert.equal(shifted[i]!.clientRegion, requests[i]!.clientRegion);
    else assert.equal(shifted[i]!.clientRegion, "us-ashburn");
  }
  const mixed = shiftClientMix(requests, 0, { "us-ashburn": 1, "ap-seoul": 1 });
  const regionOf = new Map<string, string>();
  for (const r of mixed) {
    assert.ok(r.clientRegion === "us-ashburn" || r.clientRegion === "ap-seoul");
    assert.equal(regionOf.get(r.sessionKey) ?? r.clientRegion, r.clientRegion);
    regionOf.set(r.sessionKey, r.clientRegion);
  }
});

test("busy but clears: the chosen load clears, the next heavier one on the grid does not, and the search is deterministic", async () => {
  // Long prompts on the paper fleet: the whole bundled fixture saturates well before it becomes one burst.
  const paper = paperFleet();
  const rows = await loadTrace(bundledTracePath());
  const built = new Map<number, SimRequest[]>();
  const at = (scale: number) => {
    if (!built.has(scale))
      built.set(
        scale,
        buildSimRequests(
          rows.map((r) => ({ ...r, timestampMs: r.timestampMs * scale })),
          paper,
        ).requests,
      );
    return built.get(scale)!;
  };
  const busy = busyButClears(paper, at);
  assert.equal(busy.limitedBy, "load");
  const chosen = busy.probes.find((p) => p.timeScale === busy.timeScale);
  assert.ok(chosen?.clears, "the chosen load clears");
  const last = busy.probes.at(-1)!;
  assert.equal(last.clears, false, "the search stops at the first load that does not clear");
  assert.ok(Math.abs(last.timeScale * LOAD_STEP - busy.timeScale) < 1e-9, "and that load is one step heavier than the chosen one");
  assert.ok(last.e2eP95Ms > 3 * busy.unloadedE2eP95Ms || last.drainMs > 3 * busy.unloadedE2eP95Ms);
  assert.deepEqual(busyButClears(paper, at), busy);

  // Under several seeds a load clears only if it clears under each: never heavier than one seed's.
  const everySeed = busyButClears(paper, at, { seeds: [1, 2, 3] });
  assert.ok(everySeed.timeScale >= busy.timeScale, `${everySeed.timeScale} vs ${busy.timeScale}`);
  assert.match(everySeed.rule, /under each of the seeds 1, 2, 3/);
  for (const seed of [2, 3]) assert.ok(busyButClears(paper, at, { seed }).timeScale <= everySeed.timeScale);
  assert.throws(() => busyButClears(paper, at, { seeds: [] }), /at least one seed/);
});

test("busy but clears on a workload too short to load the fleet says so instead of inventing a load", async () => {
  const rows = await rowsPromise;
  const at = (scale: number) =>
    scalePrompts(
      buildSimRequests(
        rows.map((r) => ({ ...r, timestampMs: r.timestampMs * scale })),
        spec,
      ).requests,
      0.05,
    );
  const busy = busyButClears(spec, at);
  assert.equal(busy.limitedBy, "span");
  assert.ok(busy.probes.every((p) => p.clears));
});

test("busy but clears refuses, with a reason, a workload without two arrival times instead of crashing on it", async () => {
  const all = await workloadAt(1);
  const firstTick = all.filter((r) => r.arrivalMs === all[0]!.arrivalMs);
  assert.ok(firstTick.length >= 2);
  assert.equal(busyLoadProblem(all), null);
  assert.match(busyLoadProblem(firstTick)!, /all \d+ requests arrive at the same time/);
  assert.match(busyLoadProblem(all.slice(0, 1))!, /at least two requests, got 1/);
  assert.match(busyLoadProblem([])!, /at least two requests, got 0/);
  assert.throws(() => busyButClears(spec, () => firstTick), /busyButClears cannot pick a load: all \d+ requests arrive at the same time/);
});

test("busy but clears: a prompt over the LB's limit, refused at every load, is the trace's refusal and does not stop the search", async () => {
  // One row grown to 133,000 tokens (the LB refuses prompts above 131,072): before, that one refusal
  // failed the first probe and the unloaded reference came back as the busy load, limitedBy "load".
  const paper = paperFleet();
  const rows = await loadTrace(bundledTracePath());
  const long = rows.map((r, i) =>
    i === 250 ? { ...r, inputTokens: 133_000, hashIds: [...r.hashIds, ...Array.from({ length: 260 }, (_, k) => 9_000_000 + k)] } : r,
  );
  const at = (scale: number) =>
    buildSimRequests(
      long.map((r) => ({ ...r, timestampMs: r.timestampMs * scale })),
      paper,
    ).requests;
  const busy = busyButClears(paper, at);
  assert.equal(busy.unloadedRefused, 1, "the unloaded run refuses the over-limit row, and the output says so");
  assert.ok(busy.timeScale < busy.unloadedTimeScale, `the busy load ${busy.timeScale} is heavier than the unloaded reference ${busy.unloadedTimeScale}`);
  assert.equal(busy.limitedBy, "load");
  for (const p of busy.probes.filter((x) => x.clears)) {
    assert.equal(p.refused, 1, "every load refuses the row");
    assert.equal(p.refusedBeyondUnloaded, 0);
  }
  // The row counts for nothing: the search finds the load it finds without it.
  const without = (scale: number) => at(scale).filter((r) => r.inputTokens <= 131_072);
  assert.equal(busy.timeScale, busyButClears(paper, without).timeScale);
});

test("busy but clears says limitedBy 'unloaded' when the first load heavier than the reference does not clear", async () => {
  // A workload whose every prompt goes over the LB's limit at any load heavier than the reference: the
  // first probe refuses requests the unloaded run served, and the search has no busy load to give.
  const paper = paperFleet();
  const rows = await loadTrace(bundledTracePath());
  const build = (scale: number) =>
    buildSimRequests(
      rows.map((r) => ({ ...r, timestampMs: r.timestampMs * scale })),
      paper,
    ).requests;
  const unloadedScale = busyButClears(paper, build).unloadedTimeScale;
  // (Time scale 1 is where the search reads the offered load, so it stays as recorded.)
  const at = (scale: number) => (scale < unloadedScale && scale !== 1 ? build(scale).map((r) => ({ ...r, inputTokens: 133_000 })) : build(scale));
  const busy = busyButClears(paper, at);
  assert.equal(busy.limitedBy, "unloaded");
  assert.equal(busy.timeScale, busy.unloadedTimeScale, "the time scale is the unloaded reference, and limitedBy says so");
  assert.equal(busy.probes.length, 1);
  assert.equal(busy.probes[0]!.clears, false);
  assert.ok(busy.probes[0]!.refusedBeyondUnloaded > 0);
});
