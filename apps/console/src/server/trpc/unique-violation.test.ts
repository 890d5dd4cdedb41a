// A name the database's UNIQUE index refuses is a 409 "already exists", whichever check let it
// through: here an exact duplicate with a non-ASCII capital, which the services' case-insensitive
// check misses on SQLite (its lower() folds ASCII only; a documented limit). It used to reach the
// operator as a 500 (SQLITE_CONSTRAINT_UNIQUE was not mapped). Runs on both stores.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { call } from "./errors";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";

let h: Harness;
before(async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "eu" });
});
after(async () => {
  await h?.close();
});

test("a second LB named exactly 'Édge' is a 409 'already exists', as 'Edge' twice is", async () => {
  await call(() => createLb(h.rt, OPERATOR, { name: "Édge", url: "http://127.0.0.1:1", region: "eu" }));
  const error = await call(() => createLb(h.rt, OPERATOR, { name: "Édge", url: "http://127.0.0.1:2", region: "eu" })).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof TRPCError, `not a TRPCError (a 500): ${String(error)}`);
  assert.equal(error.code, "CONFLICT");
  assert.match(error.message, /already exists/);
});
