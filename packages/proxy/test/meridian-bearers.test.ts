// A Meridian credential is never passed on to an engine (client-keys.ts): an LB token or a client
// key with a typo, presented as a client's bearer while keys are not required, used to reach the
// replica verbatim (and an LB token opens the LB's admin API). An engine's own key still passes.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { RunningProxy } from "../src/index";
import { generateClientKey } from "@meridian/protocol/credentials";
import { chatBody, lbConfig, post, startEngine, startLb, TOKEN, type Engine } from "./helpers";
import { type AuthorizationTap, startAuthorizationTap } from "./authorization-tap";

let engine: Engine;
let tap: AuthorizationTap;
let lb: RunningProxy;

before(async () => {
  engine = await startEngine("us-1", "us-ashburn");
  tap = await startAuthorizationTap(engine);
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [tap.replica]));
});
after(async () => {
  await lb?.close();
  tap?.close();
  await engine?.close();
});

test("no Meridian credential reaches the engine", async () => {
  const almostKey = `${generateClientKey("a1b2c3d4e5f6")}x`; // a client key with one stray character
  for (const bearer of [TOKEN, almostKey]) {
    const res = await post(`${lb.url}/v1/chat/completions`, chatBody(`hi ${bearer.slice(0, 4)}`), { authorization: `Bearer ${bearer}` });
    assert.equal(res.status, 200);
  }
  const leaked = tap.authorizations.filter((a) => a !== undefined);
  assert.deepEqual(leaked, [], `the engine received: ${leaked.join(" ; ")}`);
  // The engine's own key (not Meridian's shape) is passed through, as before keys existed.
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("engine key"), { authorization: "Bearer sk-engine-123" })).status, 200);
  assert.equal(tap.authorizations.at(-1), "Bearer sk-engine-123");
});
