// A leader whose duties failed to start (one step threw: a PostgreSQL connection dropped by a server
// restart, SQLITE_BUSY) tries them again. It used to log the error and go on renewing its lease with
// half its duties: no reconcile (edits made on other consoles never became config versions), no
// credential keeper, and no other console could take over.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { desc, eq } from "drizzle-orm";
import type { LbConfig } from "@meridian/protocol";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, type Harness, OPERATOR, waitFor } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";

let h: Harness;
after(async () => {
  await h?.close();
});

test("a leader whose duties failed to start once retries them: a change made on another console is published", async () => {
  const { log, lines } = loggedLines();
  h = await createHarness({}, log);
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: "lb-a", url: "http://127.0.0.1:9", region: "us-ashburn" }, "lb-a");
  // The first step of the duties' start meets one transient database error.
  const telemetry = h.rt.telemetry;
  const start = telemetry.start.bind(telemetry);
  let failures = 1;
  telemetry.start = async () => {
    if (failures-- > 0) throw new Error("Connection terminated unexpectedly");
    return start();
  };
  await h.rt.start();
  await waitFor(() => h.rt.leadership.view().isLeader, 10_000, "the console leads");
  const messages = () => lines.map((line) => line.msg).filter((msg) => msg.startsWith("console duties"));
  await waitFor(() => messages().includes("console duties started (leader)"), 10_000, "the duties started on a retry");
  assert.deepEqual(messages(), ["console duties failed to start; retrying", "console duties started (leader)"]);

  // Another console (a follower: it records no version) changes lb-a's policy; the leader's
  // reconcile publishes it.
  const { loadBalancers, lbConfigs } = h.rt.store.tables;
  await h.rt.store.db.update(loadBalancers).set({ policy: "least-load" }).where(eq(loadBalancers.id, "lb-a"));
  await waitFor(
    async () => {
      const [latest] = await h.rt.store.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, "lb-a")).orderBy(desc(lbConfigs.version)).limit(1);
      return latest && (JSON.parse(latest.json) as LbConfig).policy === "least-load";
    },
    10_000,
    "the leader's reconcile to publish the change",
  );
  assert.equal(h.rt.leadership.view().isLeader, true, "still the leader, now with its duties");
});
