// Names an operator reads in pickers, logs and the audit: two that differ only in case are one name,
// and a renamed thing may change its own name's case; control characters are refused at the API.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { DomainError } from "../errors";
import { name } from "../routers/schemas";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { listAudit } from "./audit";
import { createLb, listLbs, updateLb } from "./lbs";
import { createRegion } from "./regions";
import { createReplica, updateReplica } from "./replicas";

describe("names that differ only in case", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
  });
  after(async () => {
    await h.close();
  });
  const conflict = (fn: () => Promise<unknown>) =>
    assert.rejects(fn, (e: unknown) => e instanceof DomainError && e.kind === "conflict" && /already exists/.test(e.message));

  test("a second LB named LB-US beside lb-us is a 409, and lb-us may rename itself to LB-US", async () => {
    const { id } = await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:1", region: "us" });
    await conflict(() => createLb(h.rt, OPERATOR, { name: "LB-US", url: "http://127.0.0.1:2", region: "us" }));
    await createLb(h.rt, OPERATOR, { name: "lb-us-2", url: "http://127.0.0.1:2", region: "us" });
    await conflict(() => updateLb(h.rt, OPERATOR, { id: "lb-us-2", name: "Lb-Us" }));
    await updateLb(h.rt, OPERATOR, { id, name: "LB-US" });
    assert.deepEqual((await listLbs(h.rt)).map((l) => l.name).sort(), ["LB-US", "lb-us-2"]);
  });

  test("a second replica named R1 beside r1 is a 409, and r1 may rename itself to R1", async () => {
    const { id } = await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:3", region: "us", engine: "sglang", model: "m" });
    await conflict(() => createReplica(h.rt, OPERATOR, { name: "R1", url: "http://127.0.0.1:4", region: "us", engine: "sglang", model: "m" }));
    await updateReplica(h.rt, OPERATOR, { id, name: "R1" });
  });

  test("the audit's prefix filter is literal: '_' and '%' match only themselves", async () => {
    assert.ok((await listAudit(h.rt, {})).length > 0);
    assert.deepEqual(await listAudit(h.rt, { action: "_" }), []);
    assert.deepEqual(await listAudit(h.rt, { action: "%" }), []);
    assert.ok((await listAudit(h.rt, { action: "lb." })).every((e) => e.action.startsWith("lb.")));
  });
});

test("a name with a newline or a tab is refused with the reason", () => {
  for (const bad of ["lb\nus", "lb\tus", "lb\u0000us"]) {
    const parsed = name.safeParse(bad);
    assert.equal(parsed.success, false, JSON.stringify(bad));
    assert.match(parsed.error?.issues[0]?.message ?? "", /control characters/);
  }
  assert.equal(name.safeParse("  lb-us  ").data, "lb-us");
  assert.equal(name.safeParse("région-ü").success, true);
});
