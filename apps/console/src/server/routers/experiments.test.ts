// The experiments router refuses, as a 400 naming the field, what the simulator would refuse only
// after a run was started (and then failed).
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { ZodError } from "zod";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { router } from "../trpc/init";
import { experimentsRouter } from "./experiments";

describe("experiments router", () => {
  let h: Harness;
  let experiments: ReturnType<ReturnType<typeof router<{ experiments: typeof experimentsRouter }>>["createCaller"]>["experiments"];
  before(async () => {
    h = await createHarness({ simCommand: () => ({ command: process.execPath, args: ["-e", ""], cwd: process.cwd() }) });
    experiments = router({ experiments: experimentsRouter }).createCaller({
      rt: h.rt,
      user: { id: 1, username: OPERATOR.username, role: "operator" },
    }).experiments;
  });
  after(() => h.close());

  test("a policy listed twice is a 400 naming it, and no run is started", async () => {
    const error = await experiments.run({ traceId: "bundled", timeScale: 1, policies: ["gorgo", "random", "gorgo"] }).then(
      (r) => assert.fail(`accepted: run ${r.id} started`),
      (e: unknown) => e,
    );
    assert.ok(error instanceof TRPCError);
    assert.equal(error.code, "BAD_REQUEST");
    assert.ok(error.cause instanceof ZodError);
    assert.deepEqual(
      error.cause.issues.map((i) => `${i.path.join(".")}: ${i.message}`),
      ['policies: policy "gorgo" is listed twice'],
    );
    assert.deepEqual(await h.rt.store.db.select().from(h.rt.store.tables.experiments), []);
  });
});
