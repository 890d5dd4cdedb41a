// What the official openai SDK reads besides completions, through the LB: models.retrieve (GET
// /v1/models/{id}), models.list with a real `created` and replica counts that keep a drained replica
// healthy, and embeddings, placed by the LB core like any prompt (prefix keys, no decode) on the
// simulated engines, which serve them too.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import type { RunningProxy } from "../src/index";
import { request } from "undici";
import { adminPutConfig, lbConfig, MODEL, startEngine, startLb, waitFor, type Engine } from "./helpers";

let engines: Engine[];
let lb: RunningProxy;
let client: OpenAI;

before(async () => {
  engines = [await startEngine("us-1", "us-ashburn"), await startEngine("us-2", "us-ashburn")];
  lb = await startLb(lbConfig("lb-us", "us-ashburn", engines));
  client = new OpenAI({ baseURL: `${lb.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  await lb?.close();
  for (const engine of engines ?? []) await engine.close();
});

test("models.retrieve names a served model; an unknown one is a 404 model_not_found", async () => {
  const startedAt = Math.floor(Date.now() / 1000);
  const model = await client.models.retrieve(MODEL);
  assert.equal(model.id, MODEL);
  assert.equal(model.object, "model");
  assert.equal(model.owned_by, "meridian");
  assert.ok(model.created > 0 && model.created <= startedAt, `created ${model.created} is when the LB first served it`);
  await assert.rejects(
    () => client.models.retrieve("no-such-model"),
    (error: unknown) => error instanceof OpenAI.NotFoundError && error.code === "model_not_found" && /no-such-model/.test(error.message),
  );
  // A Hugging Face id has a slash; the SDK percent-encodes it, and the LB decodes it.
  const encoded = await request(`${lb.url}/v1/models/${encodeURIComponent("org/none")}`);
  assert.equal(encoded.statusCode, 404);
  assert.match(await encoded.body.text(), /`org\/none`/);
});

test("models.list: created is stable, and a drained replica is healthy but not serving", async () => {
  type Listed = OpenAI.Models.Model & { replicas: number; healthy_replicas: number; serving_replicas: number };
  // Probed every 200 ms and unhealthy after 2 misses: on a loaded machine a probe can time out, so
  // the listing is read once both replicas are healthy again rather than at one instant.
  const listing = async (ready: (m: Listed) => boolean) =>
    waitFor("the listing settled", async () => {
      const m = (await client.models.list()).data[0] as Listed;
      return ready(m) ? m : undefined;
    });
  const first = await listing((m) => m.healthy_replicas === 2);
  assert.equal(first.replicas, 2);
  assert.equal(first.serving_replicas, 2);
  const config = lbConfig("lb-us", "us-ashburn", engines, { version: 2 });
  config.replicas = (config.replicas ?? []).map((r) => (r.id === "us-2" ? { ...r, state: "draining" as const } : r));
  await adminPutConfig(lb, config);
  const after = await listing((m) => m.healthy_replicas === 2);
  assert.equal(after.serving_replicas, 1, "draining is not unhealthy, and not serving");
  assert.equal(after.created, first.created, "a config push does not renew a model that stayed");
  await adminPutConfig(lb, lbConfig("lb-us", "us-ashburn", engines, { version: 3 }));
});

test("embeddings through the LB: routed like a prompt, the same vectors as the replica's, cached prefixes predicted", async () => {
  const input = `Meridian routes inference traffic across regions. ${"The same long document prefix. ".repeat(40)}`;
  const viaLb = await client.embeddings.create({ model: MODEL, input }).withResponse();
  const replica = viaLb.response.headers.get("x-meridian-replica");
  assert.ok(replica === "us-1" || replica === "us-2", `served by a replica, got ${replica}`);
  const engine = engines.find((e) => e.id === replica)!;
  const direct = await new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: "unused", maxRetries: 0 }).embeddings.create({ model: MODEL, input });
  assert.equal(viaLb.data.data.length, 1);
  assert.equal(viaLb.data.data[0]!.embedding.length, 256);
  assert.deepEqual(viaLb.data.data[0]!.embedding, direct.data[0]!.embedding, "the SDK decodes the same vector (base64 by default)");
  assert.ok(viaLb.data.usage.prompt_tokens > 100);

  // The LB learned the prompt's blocks: the next request with that prefix goes to the same replica,
  // which reports the prefix cached, and the LB predicted it.
  const again = await client.embeddings.create({ model: MODEL, input: [`${input} A different ending.`, "a second input"] }).withResponse();
  assert.equal(again.response.headers.get("x-meridian-replica"), replica);
  assert.equal(again.data.data.length, 2);
  const event = await waitFor("telemetry of the second embedding", () => lb.balancer.telemetry.since(0).at(1) ?? false);
  assert.equal(event.status, 200);
  assert.equal(event.outputTokens, 0, "no decode");
  assert.ok(event.ttftMs !== null && event.ttftMs <= event.e2eMs, "an embedding's TTFT is its answer");
  assert.ok((event.actualCachedTokens ?? 0) > 100, `replica reported the prefix cached: ${event.actualCachedTokens}`);
  assert.ok(event.predictedCachedTokens > 100, `LB predicted it: ${event.predictedCachedTokens}`);
});

test("embeddings refuse a missing input and an unknown model the way completions do", async () => {
  await assert.rejects(
    () => client.embeddings.create({ model: MODEL } as unknown as OpenAI.EmbeddingCreateParams),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "input",
  );
  await assert.rejects(
    () => client.embeddings.create({ model: "no-such-model", input: "hi" }),
    (error: unknown) => error instanceof OpenAI.NotFoundError && error.code === "model_not_found",
  );
  const tokens = await client.embeddings.create({ model: MODEL, input: [1, 2, 3] }).catch((error: unknown) => error);
  assert.ok(tokens instanceof OpenAI.BadRequestError, "the LB routes token ids; the simulated engine refuses them as it does for completions");
});
