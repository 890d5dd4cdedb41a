// The metrics token (the bearer that reads GET /metrics' per-client-key series) as an operator sets
// it: a weak or unsendable one stops startup naming the variable or field, and the environment wins
// over the config file as every other setting does (flag > env > file > default).
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { readProxyEnv } from "./env";
import { loadSettings, parseProcessSettings } from "./settings";

const STRONG = "scrape-token-0123456789";
const LB_CONFIG = {
  schema: "meridian.lb-config/2",
  version: 1,
  lbId: "lb-us",
  region: "us-ashburn",
  replicas: [{ id: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", model: "m" }],
};

test("MERIDIAN_LB_METRICS_TOKEN shorter than 16 characters, or holding a space, is refused naming the variable", () => {
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_METRICS_TOKEN: "short-token" }), /MERIDIAN_LB_METRICS_TOKEN: expected at least 16/);
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_METRICS_TOKEN: "fifteen-chars-x" }), /MERIDIAN_LB_METRICS_TOKEN/);
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_METRICS_TOKEN: "a token with spaces in it" }), /MERIDIAN_LB_METRICS_TOKEN/);
  assert.equal(readProxyEnv({ MERIDIAN_LB_METRICS_TOKEN: "sixteen-chars-xy" }).MERIDIAN_LB_METRICS_TOKEN, "sixteen-chars-xy");
  // Empty is unset, as for every variable: no metrics token, not a refused one.
  assert.equal(readProxyEnv({ MERIDIAN_LB_METRICS_TOKEN: "" }).MERIDIAN_LB_METRICS_TOKEN, undefined);
});

test("proxy.metricsToken in a config file is refused when short, naming the field; the environment overrides it", () => {
  assert.throws(() => parseProcessSettings({ metricsToken: "short" }), /proxy\.metricsToken: expected at least 16/);
  assert.equal(parseProcessSettings({}).metricsToken, null);
  const document = JSON.stringify({ proxy: { metricsToken: "from-the-file-0123456789" }, lb: LB_CONFIG });
  const fromFile = loadSettings({ env: readProxyEnv({ MERIDIAN_LB_CONFIG_JSON: document }) });
  assert.equal(fromFile.process.metricsToken, "from-the-file-0123456789");
  const fromEnv = loadSettings({ env: readProxyEnv({ MERIDIAN_LB_CONFIG_JSON: document, MERIDIAN_LB_METRICS_TOKEN: STRONG }) });
  assert.equal(fromEnv.process.metricsToken, STRONG);
});
