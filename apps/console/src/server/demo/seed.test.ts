import { strict as assert } from "node:assert";
import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { generateLbToken, lbKeyId } from "@meridian/protocol/credentials";
import { after, before, describe, test } from "node:test";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { deleteLb, entrypointMap } from "../services/lbs";
import { deleteReplica } from "../services/replicas";
import { setTunerScope } from "../services/tuner";
import { rttMatrix } from "../services/regions";
import { seedDemoTopology } from "./seed";
import { demoTokenFile } from "../../lib/demo-files";
import { presentableToken } from "../runtime/lb-token-rows";
import { demoTopology } from "../../lib/demo-topology";
import { FLEET } from "../runtime/tuner-scope";

describe("demo topology", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness({ newLbToken: generateLbToken });
  });
  after(() => h.close());

  test("ports follow the base port: engines B+1..B+6, LBs B+11..B+13", () => {
    const topology = demoTopology(5000);
    assert.deepEqual(
      topology.engines.map((e) => e.port),
      [5001, 5002, 5003, 5004, 5005, 5006],
    );
    assert.deepEqual(
      topology.lbs.map((l) => l.port),
      [5011, 5012, 5013],
    );
    assert.deepEqual(new Set(topology.engines.map((e) => e.engine)), new Set(["sglang", "vllm"]));
  });

  test("seeding is idempotent and follows a new base port", async () => {
    await seedDemoTopology(h.rt, { basePort: 4100 });
    const auditRows = (await h.rt.store.db.select().from(h.rt.store.tables.auditLog)).length;
    await seedDemoTopology(h.rt, { basePort: 4100 });
    assert.equal((await h.rt.store.db.select().from(h.rt.store.tables.regions)).length, 3);
    assert.equal((await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers)).length, 3);
    assert.equal((await h.rt.store.db.select().from(h.rt.store.tables.replicas)).length, 6);
    assert.equal((await h.rt.store.db.select().from(h.rt.store.tables.auditLog)).length, auditRows, "a second seed changes nothing");
    assert.equal((await entrypointMap(h.rt))["ap-seoul"]?.url, "http://127.0.0.1:4113");
    const matrix = await rttMatrix(h.rt);
    const ashburn = matrix.regions.indexOf("us-ashburn");
    assert.equal(matrix.rttMs[ashburn]![matrix.regions.indexOf("ap-seoul")], 464);
    // A fresh demo tunes the fleet with one tuner, in small trials; each LB's own tuner stands aside
    // with the same trial settings, ready for a switch to per LB.
    assert.equal(await h.rt.tuners.scope(), "fleet");
    const fleet = await h.rt.tuners.describe(FLEET);
    assert.equal(fleet.running, true);
    assert.equal(fleet.evaluation, "ab");
    assert.deepEqual(fleet.trialSettings, { share: 0.5, lookEvery: 20, maxSamples: 120 });
    assert.ok(fleet.trial !== null, "a trial runs from the start");
    const own = await h.rt.tuners.describe("lb-us-ashburn");
    assert.equal(own.running, false);
    assert.deepEqual(own.trialSettings, { share: 0.5, lookEvery: 20, maxSamples: 120 });
    await seedDemoTopology(h.rt, { basePort: 5100 });
    assert.equal((await entrypointMap(h.rt))["ap-seoul"]?.url, "http://127.0.0.1:5113");
  });

  test("an LB seeded again into a demo an operator tunes per LB starts its own tuner", async () => {
    await seedDemoTopology(h.rt, { basePort: 5100 });
    await setTunerScope(h.rt, OPERATOR, { scope: "lb" });
    for (const id of ["eu-frankfurt-a", "eu-frankfurt-b"]) await deleteReplica(h.rt, OPERATOR, { id });
    await deleteLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    await seedDemoTopology(h.rt, { basePort: 5100 });
    assert.equal(await h.rt.tuners.scope(), "lb", "the operator's scope stands");
    const own = await h.rt.tuners.describe("lb-eu-frankfurt");
    assert.equal(own.running, true);
    assert.deepEqual(own.trialSettings, { share: 0.5, lookEvery: 20, maxSamples: 120 });
    assert.equal((await h.rt.tuners.describe("lb-us-ashburn")).running, false, "the others stay as the switch left them");
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
  });

  test("each demo LB's token is written for the fleet (0600), and replaced only when its file is gone", async () => {
    const tokenDir = join(h.dir, "demo-5100");
    await seedDemoTopology(h.rt, { basePort: 5100, tokenDir });
    // The LBs existed already (earlier test, no token files): each got a new token and its file.
    const first = readFileSync(demoTokenFile(tokenDir, "lb-ap-seoul"), "utf8").trim();
    assert.equal(statSync(demoTokenFile(tokenDir, "lb-ap-seoul")).mode & 0o777, 0o600);
    assert.equal((await presentableToken(h.rt.store, "lb-ap-seoul"))?.keyId, lbKeyId(first));
    await seedDemoTopology(h.rt, { basePort: 5100, tokenDir });
    assert.equal(readFileSync(demoTokenFile(tokenDir, "lb-ap-seoul"), "utf8").trim(), first, "a restart keeps the token");
    rmSync(demoTokenFile(tokenDir, "lb-ap-seoul"));
    await seedDemoTopology(h.rt, { basePort: 5100, tokenDir });
    const second = readFileSync(demoTokenFile(tokenDir, "lb-ap-seoul"), "utf8").trim();
    assert.notEqual(second, first);
    assert.equal((await presentableToken(h.rt.store, "lb-ap-seoul"))?.keyId, lbKeyId(second));
  });
});
