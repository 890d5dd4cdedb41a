// Routing follows the GORGO cost: a warm far replica beats a cold near one when the prompt is long
// (prefill dominates), a warm near one beats a cold far one, and a short prompt goes near.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { LbState, TelemetryEvent } from "@meridian/protocol";
import type { RunningProxy } from "../src/index";
import { adminGet, adminPutConfig, chatBody, lbConfig, post, servedBy, startEngine, startLb, TOKEN, waitFor, type Engine } from "./helpers";

let near: Engine;
let far: Engine;
let lb: RunningProxy;
let version = 1;

before(async () => {
  near = await startEngine("us-near", "us-ashburn");
  far = await startEngine("eu-far", "eu-frankfurt");
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [near, far], { policy: "gorgo", crossRegion: "direct" }));
  await waitFor("both replicas probed", async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.replicas.every((r) => r.healthy && r.rttMs !== null) ? state : undefined;
  });
});
after(async () => {
  await lb?.close();
  await near?.close();
  await far?.close();
});

/** Pushes a config in which only `enabled` takes traffic. */
async function enableOnly(enabled: readonly Engine[]): Promise<void> {
  version++;
  const config = lbConfig("lb-us", "us-ashburn", [near, far], { policy: "gorgo", crossRegion: "direct", version });
  const replicas = (config.replicas ?? []).map((r) => ({ ...r, state: enabled.some((e) => e.id === r.id) ? ("enabled" as const) : ("disabled" as const) }));
  await adminPutConfig(lb, { ...config, replicas });
}

function longConversation(topic: string, turn: string): Record<string, unknown> {
  // ~12 KB of shared history ≈ 3k tokens: prefill of it dwarfs the 60 ms × 0.5 RTT term.
  const history = `Background on ${topic}: ` + `${topic} facts and figures, line after line. `.repeat(260);
  return chatBody(turn, {
    messages: [
      { role: "system", content: history },
      { role: "user", content: turn },
    ],
  });
}

async function lastEvent(): Promise<TelemetryEvent> {
  const state = await adminGet<LbState>(lb, "/admin/state");
  const seq = state.telemetry.lastSeq;
  const response = await request(`${lb.url}/admin/telemetry?since=${seq - 1}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  // The stream opens with a heartbeat; the event follows it.
  let text = "";
  for await (const chunk of response.body) {
    text += (chunk as Buffer).toString();
    if (text.includes('"type":"event"') && text.endsWith("\n")) break;
  }
  response.body.destroy();
  const lines = text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { type: string; event: TelemetryEvent });
  const line = lines.find((l) => l.type === "event");
  assert.ok(line);
  return line.event;
}

test("a warm far replica beats a cold near one for a long shared prefix", async () => {
  await enableOnly([far]);
  const warmUp = await post(`${lb.url}/v1/chat/completions`, longConversation("glaciers", "first question"));
  assert.equal(warmUp.status, 200);
  assert.equal(servedBy(warmUp), "eu-far");
  await enableOnly([near, far]);
  const next = await post(`${lb.url}/v1/chat/completions`, longConversation("glaciers", "second question"));
  assert.equal(next.status, 200);
  assert.equal(servedBy(next), "eu-far");
  const event = await lastEvent();
  assert.equal(event.replicaId, "eu-far");
  assert.ok(event.predictedCachedTokens > 1000, `predicted ${event.predictedCachedTokens}`);
  assert.ok((event.actualCachedTokens ?? 0) > 1000, `actual ${event.actualCachedTokens}`);
});

test("a warm near replica beats a cold far one", async () => {
  await enableOnly([near]);
  assert.equal(servedBy(await post(`${lb.url}/v1/chat/completions`, longConversation("deserts", "first question"))), "us-near");
  await enableOnly([near, far]);
  assert.equal(servedBy(await post(`${lb.url}/v1/chat/completions`, longConversation("deserts", "second question"))), "us-near");
});

test("with nothing cached anywhere, RTT decides: the near replica", async () => {
  const result = await post(`${lb.url}/v1/chat/completions`, longConversation("volcanoes", "a fresh topic"));
  assert.equal(result.status, 200);
  assert.equal(servedBy(result), "us-near");
});
