// Client API keys at the LB, through the official openai SDK (issue 13 item 15): a required key
// admits its holder, a missing or wrong key is 401 in OpenAI's shape (the SDK raises
// AuthenticationError), a revoked key (gone from the next config) is 401 again, the key never reaches
// the engine, and its requests and tokens are counted under its id and name.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { parseOpenAiError, type LbConfigInput } from "@meridian/protocol";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import { parsePrometheusText, type RunningProxy } from "../src/index";
import { adminPutConfig, chatBody, completionJson, lbConfig, MODEL, post, startEngine, startHoldingEngine, startLb, waitFor, type Engine } from "./helpers";
import { type AuthorizationTap, startAuthorizationTap } from "./authorization-tap";
import { scrapeWithClientSeries } from "./client-series";

const KEY_ID = "a1b2c3d4e5f6";
const KEY = generateClientKey(KEY_ID);
const keyEntry = { id: KEY_ID, name: "team-a", region: "us-ashburn", sha256: sha256Hex(KEY) };

let engine: Engine;
let tap: AuthorizationTap;
let lb: RunningProxy;
let config: LbConfigInput;

before(async () => {
  engine = await startEngine("us-1", "us-ashburn");
  tap = await startAuthorizationTap(engine);
  config = lbConfig("lb-us", "us-ashburn", [tap.replica], { clientAuth: { required: true, keys: [keyEntry] } });
  lb = await startLb(config);
});
after(async () => {
  await lb?.close();
  tap?.close();
  await engine?.close();
});

const client = (apiKey: string) => new OpenAI({ baseURL: `${lb.url}/v1`, apiKey, maxRetries: 0 });
async function ask(apiKey: string, stream = false): Promise<void> {
  const body = chatBody("hello") as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
  if (!stream) {
    await client(apiKey).chat.completions.create(body);
    return;
  }
  const chunks = await client(apiKey).chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  for await (const _ of chunks) {
    // drained: the usage arrives with the last chunk
  }
}

async function keySamples(): Promise<{ name: string; labels: Record<string, string>; value: number }[]> {
  const text = await scrapeWithClientSeries(lb);
  return parsePrometheusText(text).samples.filter((s) => s.name.startsWith("meridian_lb_client_") && s.labels.key_id === KEY_ID);
}

test("a required key admits its holder and is counted; it never reaches the engine", async () => {
  await ask(KEY);
  await ask(KEY, true);
  assert.deepEqual(tap.authorizations, [undefined, undefined]);
  const samples = await keySamples();
  const requests = samples.find((s) => s.name === "meridian_lb_client_requests_total" && s.labels.status === "200");
  assert.equal(requests?.value, 2);
  assert.equal(requests?.labels.key_name, "team-a");
  for (const kind of ["prompt", "completion"]) {
    const tokens = samples.find((s) => s.name === "meridian_lb_client_tokens_total" && s.labels.kind === kind);
    assert.ok((tokens?.value ?? 0) > 0, `${kind} tokens counted`);
  }
  const text = await scrapeWithClientSeries(lb);
  assert.ok(!text.includes(KEY.slice(16)), "the secret is in no label");
});

test("a missing or wrong key is 401 in OpenAI's shape; the SDK raises AuthenticationError", async () => {
  await assert.rejects(ask("sk-not-a-meridian-key"), (error: unknown) => {
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "invalid_api_key");
    assert.equal(error.type, "invalid_request_error");
    return true;
  });
  await assert.rejects(ask(`${KEY.slice(0, -2)}zz`), OpenAI.AuthenticationError);
  const missing = await post(`${lb.url}/v1/chat/completions`, chatBody("no key"));
  assert.equal(missing.status, 401);
  assert.match(parseOpenAiError(JSON.parse(missing.text)).error.message, /didn't provide an API key/);
  assert.equal(tap.authorizations.length, 2, "no refused request reached the engine");
});

test("a revoked key (absent from the next config) is refused, and its series leave /metrics", async () => {
  config = { ...config, version: 2, clientAuth: { required: true, keys: [] } };
  await adminPutConfig(lb, config);
  await assert.rejects(ask(KEY), OpenAI.AuthenticationError);
  assert.deepEqual(await keySamples(), []);
});

test("without keys required, anonymous clients pass and an engine's own key still reaches it", async () => {
  config = { ...config, version: 3, clientAuth: { required: false, keys: [keyEntry] } };
  await adminPutConfig(lb, config);
  const before = tap.authorizations.length;
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("anonymous"))).status, 200);
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("engine key"), { authorization: "Bearer sk-engine" })).status, 200);
  await ask(KEY);
  assert.deepEqual(tap.authorizations.slice(before), [undefined, "Bearer sk-engine", undefined]);
  const models = await client(KEY).models.list();
  assert.ok(models.data.some((m) => m.id === MODEL));
});

test("a key revoked while one of its requests runs stays out of /metrics when that request ends", async () => {
  const held = await startHoldingEngine("us-held", "us-ashburn");
  const v1 = lbConfig("lb-held", "us-ashburn", [held], { clientAuth: { required: true, keys: [keyEntry] } });
  const keyed = await startLb(v1);
  try {
    const pending = post(`${keyed.url}/v1/chat/completions`, chatBody("hello"), { authorization: `Bearer ${KEY}` });
    await waitFor("the request at the engine", () => held.held.length === 1);
    await adminPutConfig(keyed, { ...v1, version: 2, clientAuth: { required: true, keys: [] } });
    held.held[0]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("ok"));
    assert.equal((await pending).status, 200);
    const text = await scrapeWithClientSeries(keyed);
    assert.deepEqual(
      text.split("\n").filter((line) => line.includes(KEY_ID)),
      [],
    );
  } finally {
    await keyed.close();
    await held.close();
  }
});
