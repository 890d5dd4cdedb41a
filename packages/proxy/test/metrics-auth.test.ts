// Who reads what of GET /metrics: the aggregate series are open to any scrape, the per-client-key
// series (every client key's name and traffic) only to a bearer the LB trusts with them, the metrics
// token or the console's LB token. A wrong bearer is 401 in the LB's error shape and counted as a
// refusal on the "metrics" surface. LBs and an engine on 127.0.0.1, port 0, closed after the file.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { request } from "undici";
import { parseOpenAiError } from "@meridian/protocol";
import { generateClientKey, generateLbToken, sha256Hex } from "@meridian/protocol/credentials";
import { parsePrometheusText, type RunningProxy } from "../src/index";
import { havePromtool, metricFamilies, promtoolFindings } from "../src/testing";
import { scrapeWithClientSeries } from "./client-series";
import { chatBody, lbConfig, post, startEngine, startLb, TOKEN, type Engine } from "./helpers";

const METRICS_TOKEN = "prometheus-scrape-0123456789";
const KEY_ID = "0a1b2c3d4e5f";
const KEY = generateClientKey(KEY_ID);
const keyEntry = { id: KEY_ID, name: "acme-prod", region: "us-ashburn", sha256: sha256Hex(KEY) };

let engine: Engine;
let lb: RunningProxy;

before(async () => {
  engine = await startEngine("us-1", "us-ashburn");
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { clientAuth: { required: true, keys: [keyEntry] } }), {
    settings: { metricsToken: METRICS_TOKEN },
  });
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("hello"), { authorization: `Bearer ${KEY}` })).status, 200);
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

async function scrape(target: RunningProxy, authorization?: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const response = await request(`${target.url}/metrics`, authorization === undefined ? {} : { headers: { authorization } });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
}

function clientLines(text: string): string[] {
  return text.split("\n").filter((line) => line.includes("meridian_lb_client_") || line.includes(KEY_ID) || line.includes("acme-prod"));
}

async function metricsRefusals(reason: string): Promise<number> {
  const samples = parsePrometheusText(await scrapeWithClientSeries(lb, METRICS_TOKEN)).samples;
  return samples.find((s) => s.name === "meridian_lb_auth_refusals_total" && s.labels.surface === "metrics" && s.labels.reason === reason)?.value ?? 0;
}

test("a scrape without credentials gets the aggregate series and no client key's name or traffic", async () => {
  const { status, text } = await scrape(lb);
  assert.equal(status, 200);
  assert.deepEqual(clientLines(text), []);
  assert.match(text, /^meridian_lb_requests_total\{policy="[^"]+",replica="us-1",status="200"\} 1$/m);
  const families = metricFamilies(text);
  for (const name of ["meridian_lb_ttft_seconds", "meridian_lb_config_info", "process_cpu_seconds_total"]) assert.ok(families.has(name), `${name} exported`);
});

test("the metrics token and the console's LB token each read the client series", async () => {
  for (const bearer of [METRICS_TOKEN, TOKEN]) {
    const text = await scrapeWithClientSeries(lb, bearer);
    assert.match(text, new RegExp(`^meridian_lb_client_requests_total\\{key_id="${KEY_ID}",key_name="acme-prod",status="200"\\} 1$`, "m"));
    assert.match(text, new RegExp(`^meridian_lb_client_tokens_total\\{key_id="${KEY_ID}",key_name="acme-prod",kind="prompt"\\} [1-9]`, "m"));
    assert.match(text, /^meridian_lb_requests_total\{/m, "the aggregate series too");
    assert.ok(!text.includes(KEY.slice(16)), "the key's secret is in no label");
  }
});

test("a wrong bearer is 401 in the LB's error shape, shows nothing of the clients, and is counted", async () => {
  const before = { invalid: await metricsRefusals("invalid"), missing: await metricsRefusals("missing") };
  // A guess, a client key (not a scrape credential), another LB's token, a token without "Bearer".
  for (const authorization of ["Bearer not-the-metrics-token-0000", `Bearer ${KEY}`, `Bearer ${generateLbToken()}`, `Basic ${METRICS_TOKEN}`]) {
    const refused = await scrape(lb, authorization);
    assert.equal(refused.status, 401, authorization);
    assert.equal(refused.headers["www-authenticate"], "Bearer");
    const { error } = parseOpenAiError(JSON.parse(refused.text));
    assert.equal(error.code, "invalid_token");
    assert.equal(error.type, "authentication_error");
    assert.deepEqual(clientLines(refused.text), []);
  }
  assert.equal(await metricsRefusals("invalid"), before.invalid + 3);
  assert.equal(await metricsRefusals("missing"), before.missing + 1);
});

test("an LB without a metrics token refuses one, and still serves the client series to its LB token", async () => {
  const bare = await startLb(lbConfig("lb-bare", "us-ashburn", [engine]));
  try {
    assert.equal((await post(`${bare.url}/v1/chat/completions`, chatBody("hello"))).status, 200);
    assert.equal((await scrape(bare, `Bearer ${METRICS_TOKEN}`)).status, 401);
    assert.match(await scrapeWithClientSeries(bare, TOKEN), /^meridian_lb_client_requests_total\{key_id="anonymous",key_name="",status="200"\} 1$/m);
    assert.deepEqual(
      (await scrape(bare)).text.split("\n").filter((line) => line.includes("meridian_lb_client_")),
      [],
    );
  } finally {
    await bare.close();
  }
});

test("the scrape with the client series passes promtool check metrics", async (t) => {
  if (!havePromtool(t)) return;
  const text = await scrapeWithClientSeries(lb, METRICS_TOKEN);
  assert.match(text, /meridian_lb_client_requests_total/);
  assert.equal(promtoolFindings(text), "", "promtool reported lint findings");
});
