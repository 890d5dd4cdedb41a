// ops/grafana/meridian.json, the dashboard shipped for the LBs' and the console's metrics, names only
// metrics that exist: every PromQL query (panels and template variables) is read, each metric name in
// it is looked up among the families a live LB (a meridian-proxy in front of a simulated engine) and
// a live console actually export; the LB is scraped as a Prometheus with the LB's metrics token does,
// which also reads the per-client-key series. With promtool, every query must also parse as PromQL.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { familyExports, havePromtool } from "@meridian/proxy/testing";
import { findRepoRoot } from "../../env";
import { LIVE_METRICS_TOKEN, type LiveExporters, startLiveExporters } from "../testing/live-exporters";
import { createHarness, type Harness } from "../testing/harness";

const DASHBOARD = join(findRepoRoot(), "ops", "grafana", "meridian.json");

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query?: string } }[] };
}

/** Every PromQL query of the dashboard, with where it is. */
function queries(dashboard: Dashboard): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  const walk = (panels: readonly Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) if (target.expr) out.push({ where: `panel "${panel.title}"`, expr: target.expr });
      walk(panel.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const variable of dashboard.templating.list) {
    if (variable.type !== "query") continue;
    const query = typeof variable.query === "string" ? variable.query : variable.query?.query;
    // label_values(selector, label): the selector is PromQL, the label is not.
    const selector = query ? /^label_values\((.*),\s*\w+\s*\)$/.exec(query)?.[1] : undefined;
    if (selector) out.push({ where: `variable $${variable.name}`, expr: selector });
  }
  return out;
}

const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan"]);

/** The metric names a PromQL expression reads: identifiers that are not functions, aggregations,
 * keywords, label names or Grafana variables. */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/\$\{[^}]*\}|\$\w+/g, " ")
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names: string[] = [];
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?/g)) {
    const [token, call] = [match[0].replace(/\s*\($/, ""), match[1]];
    if (call || KEYWORDS.has(token.toLowerCase())) continue;
    names.push(token);
  }
  return names;
}

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

test("every query of the Grafana dashboard names metrics that a live LB or console exports", async () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as Dashboard;
  // As a scrape with the LB's metrics token reads them: the client-key panels need it.
  const families = await live.families({ bearer: LIVE_METRICS_TOKEN });
  const all = queries(dashboard);
  assert.ok(all.length >= 40, `found ${all.length} queries`);
  const missing: string[] = [];
  const used = new Set<string>();
  for (const { where, expr } of all) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `${where}: no metric found in ${expr}`);
    for (const name of names) {
      used.add(name);
      if (!familyExports(families, name)) missing.push(`${where}: ${name}`);
    }
  }
  assert.deepEqual(missing, [], "queries naming metrics nobody exports");
  // Both processes are on the dashboard, and so is every series this branch added, and the LB series
  // packages/proxy/README.md documents that were on no panel: upstream failures, redispatches, cut
  // streams, refusals, the client keys and the per-replica cache series.
  for (const name of [
    "meridian_lb_upstream_failures_total",
    "meridian_lb_client_requests_total",
    "meridian_lb_client_tokens_total",
    "meridian_lb_auth_refusals_total",
    "meridian_lb_redispatched_requests_total",
    "meridian_lb_cut_streams_total",
    "meridian_lb_replica_prediction_accuracy_ratio",
    "meridian_lb_replica_cached_tokens_reported",
    "meridian_lb_replica_index_routes",
    "meridian_lb_replica_index_budget_blocks",
    "meridian_lb_replica_index_horizon_seconds",
    "meridian_lb_replica_index_clears_total",
    "meridian_lb_replica_state",
    "meridian_lb_build_info",
    "meridian_lb_config_version",
    "meridian_console_tuner_steps_total",
    "process_cpu_seconds_total",
  ]) {
    assert.ok(used.has(name), `${name} is on the dashboard`);
  }
});

test("the metric-name reader ignores functions, labels, groupings and Grafana variables", () => {
  assert.deepEqual(
    metricNames(
      'histogram_quantile(0.95, sum by (le, lb) (rate(a_bucket{job="$j", x=~"y|z"}[$__rate_interval]) * on (instance) group_left (lb) b_info{lb=~"$lb"}))',
    ),
    ["a_bucket", "b_info"],
  );
  assert.deepEqual(metricNames("60 * sum(rate(c_total[5m])) / scalar(sum(d)) and e unless bool f"), ["c_total", "d", "e", "f"]);
});

test("every query parses as PromQL (promtool check rules)", async (t) => {
  if (!havePromtool(t)) return;
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as Dashboard;
  // Grafana's variables as Prometheus would see them after substitution.
  const substitute = (expr: string) =>
    expr.replaceAll("$__rate_interval", "1m").replaceAll("$lb_job", "meridian-lb").replaceAll("$console_job", "meridian-console").replaceAll("$lb", ".*");
  const rules = queries(dashboard).map(({ expr }, i) => ({ record: `meridian:dashboard_query:${i}`, expr: substitute(expr) }));
  const dir = mkdtempSync(join(tmpdir(), "meridian-dashboard-"));
  try {
    const file = join(dir, "rules.yml");
    writeFileSync(file, JSON.stringify({ groups: [{ name: "dashboard", rules }] }));
    const check = spawnSync("promtool", ["check", "rules", file], { encoding: "utf8" });
    assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
