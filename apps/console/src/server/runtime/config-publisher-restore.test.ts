// apps/console/README.md, "Backup and restore": an LB that runs a config version the restored
// database never recorded (here one with a replica added after the backup) is given the database's
// config, numbered above its own, once two probes in a row report it.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { and, eq, gt } from "drizzle-orm";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { ConsoleRuntime } from "./runtime";

let h: Harness;
let lb: FakeLb;
let second: ConsoleRuntime | null = null;
after(async () => {
  await second?.stop();
  await h?.close();
  await lb?.close();
});

test("after a restore, an LB running a newer config than the database knows gets the restored config", async () => {
  h = await createHarness({ autoFailover: false });
  lb = await startFakeLb({ id: "lb-us", region: "us", token: TEST_TOKEN });
  await createRegion(h.rt, OPERATOR, { name: "us" });
  await createLb(h.rt, OPERATOR, { name: "lb-us", url: lb.url, region: "us" });
  await h.rt.start();
  await h.rt.health.tick();
  const { lbConfigs, loadBalancers, replicas } = h.rt.store.tables;
  const row = async () => (await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-us")))[0]!;
  await waitFor(async () => lb.version > 0 && (await row()).ackedVersion === (await row()).configVersion, 10_000, "first config acked");
  const backup = await row(); // the backup: the LB and no replica
  assert.equal(lb.configs.at(-1)?.replicas.length, 0);

  await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us", engine: "sglang", model: "m" });
  await waitFor(async () => lb.configs.at(-1)?.replicas.some((r) => r.id === "r1") && (await row()).ackedVersion > backup.configVersion, 10_000, "r1 pushed");
  await h.rt.stop();

  // Restore the backup (every console stopped): r1 and the versions recorded after it are gone.
  await h.rt.store.db.delete(replicas).where(eq(replicas.id, "r1"));
  await h.rt.store.db.delete(lbConfigs).where(and(eq(lbConfigs.lbId, "lb-us"), gt(lbConfigs.version, backup.configVersion)));
  await h.rt.store.db
    .update(loadBalancers)
    .set({ configVersion: backup.configVersion, ackedVersion: backup.ackedVersion })
    .where(eq(loadBalancers.id, "lb-us"));

  second = new ConsoleRuntime(h.rt.database, h.rt.options);
  await second.start();
  await waitFor(() => second!.leadership.currentTerm() !== null, 15_000, "the restarted console leads");
  const ranBefore = lb.version;
  await second.health.tick(); // the LB reports the version it runs: once could be a push landing mid-probe
  await second.health.tick();
  await waitFor(() => lb.version > ranBefore, 10_000, "a config above the LB's own pushed");
  assert.equal(
    lb.configs.at(-1)?.replicas.some((r) => r.id === "r1"),
    false,
    "the LB still runs the replica the restore removed",
  );
  const after = await row();
  assert.equal(after.configVersion, lb.version);
  assert.equal(after.ackedVersion, lb.version);
});
