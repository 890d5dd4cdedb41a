// Two client keys created at once with the same name in one region (two tRPC requests, or automation
// creating keys in parallel): one is refused. On PostgreSQL (read committed) both used to pass the
// "already has an active key named" check and both were inserted. SQLite serialises the two
// transactions; the test runs on both stores.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { createClientKey, listClientKeys } from "./client-keys";
import { createRegion } from "./regions";

let h: Harness;
before(async () => {
  h = await createHarness();
});
after(async () => {
  await h?.close();
});

test("keys created at once with the same name in one region: one is made, the others are refused", async () => {
  await createRegion(h.rt, OPERATOR, { name: "eu" });
  // Four rather than two: the more transactions overlap, the surer the old race shows.
  const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => createClientKey(h.rt, OPERATOR, { region: "eu", name: "ci" })));
  const active = (await listClientKeys(h.rt)).keys.filter((k) => k.region === "eu" && k.name === "ci" && k.revokedAt === null);
  assert.equal(active.length, 1, `${active.length} active keys named "ci" (outcomes: ${outcomes.map((o) => o.status).join(", ")})`);
  assert.equal(outcomes.filter((o) => o.status === "fulfilled").length, 1);
});
