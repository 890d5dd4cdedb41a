// ops/prometheus/meridian-rules.yml, the alert rules shipped for the LBs and the console, stays valid
// and true to the code: every Meridian series it names (in queries, annotations and comments, and in
// the README beside it) is one a live LB (a meridian-proxy in front of a simulated engine) or a live
// console exports, so renaming a series breaks this test; every recorded series it reads is recorded
// in the file; promtool accepts the rules and their unit tests (meridian-rules.test.yml) pass; and the
// bound of the prefix-collapse alert is the one the console's Replicas page calls "collapsed", and
// the failback advice is the console's default (automatic only when configured). Here
// rather than beside the LB: only a console test can start both processes (as
// grafana-dashboard.test.ts does), and npm test finds no tests under ops/.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { familyExports, havePromtool } from "@meridian/proxy/testing";
import { autoFailbackAfterMs, findRepoRoot } from "../../env";
import { indexStatus } from "../runtime/index-status";
import { type LiveExporters, startLiveExporters } from "../testing/live-exporters";
import { createHarness, type Harness } from "../testing/harness";
import { replicaCache } from "../testing/replica-cache";

const DIR = join(findRepoRoot(), "ops", "prometheus");
const RULES = join(DIR, "meridian-rules.yml");
const RULE_TESTS = join(DIR, "meridian-rules.test.yml");
const README = join(DIR, "README.md");

/** Series names in Meridian's own namespaces (the LB's, the console's, and the Node process series
 * both export). Anything else in the file is PromQL, a label, a template or prose. */
const OURS = /\b(?:meridian_|process_|nodejs_)[a-zA-Z0-9_]+/g;
/** Recorded series, named level:metric:operations (`instance:meridian_lb_requests:rate5m`). */
const RECORDED = /\b[a-z_]+:meridian_[a-zA-Z0-9_:]+/g;

let h: Harness;
let live: LiveExporters;

before(async () => {
  h = await createHarness();
  live = await startLiveExporters(h);
});
after(async () => {
  await live?.close();
  await h?.close();
});

test("every series the alert rules name is one a live LB or console exports, or one the rules record", async () => {
  const text = readFileSync(RULES, "utf8");
  // The LB's series as a scrape without its metrics token reads them: no alert may need the token.
  const families = await live.families();
  const recorded = new Set([...text.matchAll(/^\s*- record:\s*(\S+)\s*$/gm)].map((m) => m[1] as string));
  // The README's names too; `meridian_lb_*` (a prefix, ending in _) names a family of series.
  const prose = readFileSync(README, "utf8");
  const named = new Set([...`${text}\n${prose}`.replace(RECORDED, " ").matchAll(OURS)].map((m) => m[0]).filter((name) => !name.endsWith("_")));
  assert.ok(named.size >= 25, `found ${named.size} series names`);
  const missing = [...named].filter((name) => !familyExports(families, name));
  assert.deepEqual(missing, [], "series the rules name that neither the LB nor the console exports");
  const unrecorded = [...new Set([...text.matchAll(RECORDED)].map((m) => m[0]))].filter((name) => !recorded.has(name));
  assert.deepEqual(unrecorded, [], "recorded series the rules read that no rule records");
  // Both processes are watched, and the series the on-call needs most.
  for (const name of [
    "meridian_lb_ttft_seconds_bucket",
    "meridian_lb_replica_healthy",
    "meridian_lb_upstream_failures_total",
    "meridian_lb_cut_streams_total",
    "meridian_lb_redispatched_requests_total",
    "meridian_lb_auth_refusals_total",
    "meridian_lb_queue_length",
    "meridian_lb_replica_prediction_accuracy_ratio",
    "meridian_console_config_push_failing",
    "meridian_console_lb_config_version",
    "meridian_console_tuner_steps_total",
  ]) {
    assert.ok(named.has(name), `${name} is alerted on`);
  }
});

test("the series-name reader finds names in queries and prose, and leaves recorded series, labels and templates alone", () => {
  const sample =
    'sum by (job, instance) (rate(meridian_lb_requests_total{job="meridian-lb", status=~"5.."}[5m])) / instance:meridian_lb_requests:rate5m\n' +
    "# the LB-wide meridian_lb_prediction_accuracy_ratio is cumulative; {{ $labels.lb }}: process_cpu_seconds_total";
  assert.deepEqual(
    [...sample.replace(RECORDED, " ").matchAll(OURS)].map((m) => m[0]),
    ["meridian_lb_requests_total", "meridian_lb_prediction_accuracy_ratio", "process_cpu_seconds_total"],
  );
  assert.deepEqual(
    [...sample.matchAll(RECORDED)].map((m) => m[0]),
    ["instance:meridian_lb_requests:rate5m"],
  );
});

test("promtool accepts the rules, and the alert unit tests pass", (t) => {
  if (!havePromtool(t)) return;
  const check = spawnSync("promtool", ["check", "rules", RULES], { encoding: "utf8" });
  assert.equal(check.status, 0, `promtool check rules:\n${check.stdout}${check.stderr}`);
  assert.match(check.stdout, /SUCCESS: \d+ rules found/);
  const unit = spawnSync("promtool", ["test", "rules", RULE_TESTS], { encoding: "utf8" });
  assert.equal(unit.status, 0, `promtool test rules:\n${unit.stdout}${unit.stderr}`);
});

test("the prefix-collapse alert fires below the accuracy the Replicas page calls collapsed", () => {
  const text = readFileSync(RULES, "utf8");
  const bound = /meridian_lb_replica_prediction_accuracy_ratio\{[^}]*\}\s*<\s*([0-9.]+)/.exec(text)?.[1];
  assert.ok(bound, "the collapse alert compares the per-replica accuracy with a bound");
  const below = Number(bound);
  assert.equal(indexStatus(replicaCache({ accuracy: below - 0.01 }), 0).kind, "collapsed", `${below - 0.01} fires the alert`);
  assert.notEqual(indexStatus(replicaCache({ accuracy: below }), 0).kind, "collapsed", `${below} does not fire the alert`);
});

test("the failback advice holds for a console with default settings: Fail back on the Load balancers page, automatic only when configured", () => {
  // Outside the demo the console fails nothing back by itself; an on-call told it would waits for good.
  assert.equal(autoFailbackAfterMs({ MERIDIAN_AUTO_FAILBACK_AFTER_S: undefined, MERIDIAN_DEMO: false }), 0, "off by default, as the docs say");
  assert.equal(autoFailbackAfterMs({ MERIDIAN_AUTO_FAILBACK_AFTER_S: undefined, MERIDIAN_DEMO: true }), 30_000, "the demo's 30 s, as the docs say");
  const rules = readFileSync(RULES, "utf8");
  const readme = readFileSync(README, "utf8");
  for (const alert of ["MeridianLbDown", "MeridianLbFailedOver"]) {
    const rule = rules.split(/^\s*- alert: /m).find((block) => block.startsWith(`${alert}\n`));
    const row = readme.split("\n").find((line) => line.startsWith(`| \`${alert}\``));
    for (const [where, text] of [
      ["rule", rule],
      ["README row", row],
    ] as const) {
      assert.ok(text, `${alert}'s ${where}`);
      // Folded YAML: a phrase may break across lines.
      const prose = text.replace(/\s+/g, " ");
      assert.match(prose, /Fail back/, `${alert}'s ${where} says what the on-call does`);
      assert.match(prose, /MERIDIAN_AUTO_FAILBACK_AFTER_S/, `${alert}'s ${where} says when failback is automatic`);
    }
  }
  assert.doesNotMatch(
    `${rules}\n${readme}`.replace(/\s+/g, " "),
    /fails it back by itself|failback is automatic[;.]|fails it back after its healthy period/,
    "no unconditional claim",
  );
});
