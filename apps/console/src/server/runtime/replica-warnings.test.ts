// Issue 15 item 11: an engine that joins without RTT emulation, or with a model its LB's clients do
// not ask for, is flagged on the replicas page and in the log.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica, listReplicas } from "../services/replicas";
import { replicaWarnings, type LbView, type ReplicaFacts } from "./replica-warnings";

// The demo's region RTTs (ms); "us-new" is an engine started without --rtt-matrix: ~1 ms from everywhere.
const RTT: Record<string, Record<string, number>> = {
  "us-ashburn": { "us-ashburn": 37, "eu-frankfurt": 292, "ap-seoul": 464 },
  "eu-frankfurt": { "us-ashburn": 292, "eu-frankfurt": 37, "ap-seoul": 510 },
  "ap-seoul": { "us-ashburn": 464, "eu-frankfurt": 510, "ap-seoul": 37 },
};
const REGIONS = Object.keys(RTT);
const NO_EMULATION = "us-new";

function fleet(extra: ReplicaFacts[] = []): ReplicaFacts[] {
  return [
    ...REGIONS.flatMap((region) =>
      ["a", "b"].map((s) => ({ id: `${region}-${s}`, name: `${region}-${s}`, region, model: "meridian-demo", servingLbId: `lb-${region}` })),
    ),
    ...extra,
  ];
}

function lbViews(replicas: ReplicaFacts[]): LbView[] {
  return REGIONS.map((region) => ({
    id: `lb-${region}`,
    name: `lb-${region}`,
    region,
    rttMs: new Map(replicas.map((r) => [r.id, r.id === NO_EMULATION ? 1 : RTT[region]![r.region]!])),
  }));
}

describe("replicaWarnings", () => {
  test("a demo fleet with emulated RTTs and one model has no warning", () => {
    const replicas = fleet();
    assert.equal(replicaWarnings(replicas, lbViews(replicas)).size, 0);
  });

  test("an engine without RTT emulation is flagged by a remote LB that sees it as near while its region-mates are far", () => {
    const replicas = fleet([{ id: NO_EMULATION, name: NO_EMULATION, region: "us-ashburn", model: "meridian-demo", servingLbId: "lb-us-ashburn" }]);
    const warnings = replicaWarnings(replicas, lbViews(replicas));
    assert.deepEqual([...warnings.keys()], [NO_EMULATION]);
    const [warning] = warnings.get(NO_EMULATION)!;
    assert.equal(warning!.kind, "looks-local");
    assert.match(warning!.message, /lb-eu-frankfurt \(eu-frankfurt\) measures 1\.0 ms to this us-ashburn replica but 292 ms to the other us-ashburn replicas/);
    assert.match(warning!.message, /--rtt-matrix/);
  });

  test("a model the serving LB's other replicas do not serve is flagged; a replica without an LB or alone on its LB is not", () => {
    const replicas = fleet([
      { id: "sim-8b", name: "sim-8b", region: "eu-frankfurt", model: "meridian-sim-8b", servingLbId: "lb-eu-frankfurt" },
      { id: "orphan", name: "orphan", region: "eu-frankfurt", model: "other", servingLbId: null },
    ]);
    const lbs = lbViews(replicas);
    const warnings = replicaWarnings(replicas, lbs);
    assert.deepEqual([...warnings.keys()], ["sim-8b"]);
    assert.equal(warnings.get("sim-8b")![0]!.kind, "model-not-served");
    assert.match(warnings.get("sim-8b")![0]!.message, /lb-eu-frankfurt's other replicas serve meridian-demo, not meridian-sim-8b/);

    const alone: ReplicaFacts[] = [{ id: "x", name: "x", region: "local", model: "meridian-sim-8b", servingLbId: "lb-local" }];
    assert.equal(replicaWarnings(alone, [{ id: "lb-local", name: "lb-local", region: "local", rttMs: new Map([["x", 1]]) }]).size, 0);
  });

  test("no contrast, no warning: unprobed replicas, small gaps and a region without mates", () => {
    const lone: ReplicaFacts[] = [
      { id: "l1", name: "l1", region: "us-ashburn", model: "m", servingLbId: "lb-us" },
      { id: "r1", name: "r1", region: "eu-frankfurt", model: "m", servingLbId: "lb-eu" },
    ];
    const lbs: LbView[] = [
      {
        id: "lb-us",
        name: "lb-us",
        region: "us-ashburn",
        rttMs: new Map([
          ["l1", 1],
          ["r1", 1],
        ]),
      },
      {
        id: "lb-eu",
        name: "lb-eu",
        region: "eu-frankfurt",
        rttMs: new Map([
          ["l1", null],
          ["r1", 1],
        ]),
      },
    ];
    assert.equal(replicaWarnings(lone, lbs).size, 0);
    const near = fleet([{ id: NO_EMULATION, name: NO_EMULATION, region: "us-ashburn", model: "meridian-demo", servingLbId: "lb-us-ashburn" }]);
    const lan = lbViews(near).map((lb) => ({ ...lb, rttMs: new Map([...lb.rttMs].map(([id, ms]) => [id, Math.min(ms ?? 0, 15)])) }));
    assert.equal(replicaWarnings(near, lan).size, 0, "a 15 ms region gap is not evidence");
  });
});

describe("replica warnings in the console", () => {
  let h: Harness;
  const lbs: FakeLb[] = [];
  const { log, lines } = loggedLines("info");

  before(async () => {
    h = await createHarness({}, log);
    for (const region of ["us-ashburn", "eu-frankfurt"]) {
      const rttMs = (replica: { id: string; region: string }) => (replica.id === NO_EMULATION ? 1 : RTT[region]![replica.region]!);
      const fake = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN, rttMs });
      lbs.push(fake);
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: fake.url, region, crossRegion: "direct" }, `lb-${region}`);
      for (const s of ["a", "b"]) {
        await createReplica(
          h.rt,
          OPERATOR,
          { name: `${region}-${s}`, url: `http://127.0.0.1:9/${s}`, region, engine: "sglang", model: "meridian-demo", homeLbId: `lb-${region}` },
          `${region}-${s}`,
        );
      }
    }
    // The trap: the engine CLI's old defaults (no --rtt-matrix, model meridian-sim-8b) in us-ashburn.
    await createReplica(
      h.rt,
      OPERATOR,
      { name: NO_EMULATION, url: "http://127.0.0.1:9/new", region: "us-ashburn", engine: "sglang", model: "meridian-sim-8b", homeLbId: "lb-us-ashburn" },
      NO_EMULATION,
    );
    await h.rt.start();
  });
  after(async () => {
    await h.close();
    for (const lb of lbs) await lb.close();
  });

  test("the replicas page shows both warnings and the log has each once", async () => {
    await waitFor(() => lbs.every((lb) => lb.version > 0), 5_000, "configs pushed");
    // A tick already under way (the runtime's own, started before the pushes) may have read the LBs'
    // states from before their configs: probe until a round has read them after.
    const warningKinds = async () => {
      await h.rt.health.tick();
      const view = await listReplicas(h.rt);
      const kinds = view
        .find((r) => r.id === NO_EMULATION)!
        .warnings.map((w) => w.kind)
        .sort();
      return kinds.length === 2 ? { view, kinds } : null;
    };
    const { view, kinds } = await waitFor(warningKinds, 15_000, "a probe round that read the pushed configs");
    assert.deepEqual(kinds, ["looks-local", "model-not-served"]);
    assert.ok(view.filter((r) => r.id !== NO_EMULATION).every((r) => r.warnings.length === 0));

    await h.rt.health.tick();
    const logged = lines
      .filter((l) => l.replicaId === NO_EMULATION && l.level === 40)
      .map((l) => l.kind)
      .sort();
    assert.deepEqual(logged, ["looks-local", "model-not-served"], "each warning logged once over two probe rounds");
  });
});
