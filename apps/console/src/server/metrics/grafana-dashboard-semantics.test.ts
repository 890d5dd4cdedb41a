// What ops/grafana/meridian.json's queries mean (grafana-dashboard.test.ts checks that their names
// exist): each test evaluates one panel's query, with Grafana's variables substituted as Grafana
// does, on synthetic series shaped like the LBs' and consoles' exports, with `promtool test rules`,
// and expects what an operator reading the panel should see. Skipped without promtool (a failure in
// CI: @meridian/proxy/testing).
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { havePromtool } from "@meridian/proxy/testing";
import { findRepoRoot } from "../../env";

const DASHBOARD = join(findRepoRoot(), "ops", "grafana", "meridian.json");

interface Target {
  expr: string;
  refId: string;
}
interface Panel {
  title?: string;
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  includeAll?: boolean;
  allValue?: string | null;
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as { panels: Panel[]; templating: { list: Variable[] } };

function query(title: string, refId: string): string {
  const all: Panel[] = [];
  const walk = (ps: Panel[]) => {
    for (const p of ps) {
      all.push(p);
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  const panel = all.find((p) => p.title === title);
  assert.ok(panel, `panel "${title}"`);
  const target = panel.targets?.find((t) => t.refId === refId);
  assert.ok(target, `panel "${title}" refId ${refId}`);
  return target.expr;
}

/** Grafana's substitution of a multi-value variable set to All for the Prometheus data source: the
 * variable's allValue when it has one, else the regex alternation of every option it found
 * (options: label_values(meridian_lb_config_info{job="$lb_job"}, lb) over the time range). */
function substitute(expr: string, lbOptions: string[]): string {
  const lb = dashboard.templating.list.find((v) => v.name === "lb");
  assert.ok(lb?.includeAll);
  const all = lb.allValue ? lb.allValue : `(${lbOptions.join("|")})`;
  return expr.replaceAll("$__rate_interval", "4m").replaceAll("$lb_job", "meridian-lb").replaceAll("$console_job", "meridian-console").replaceAll("$lb", all);
}

interface Expected {
  labels: string;
  value: number;
}

/** Runs promtool's unit test of `expr` on `series` (1 m apart) at `at`; "" when it gave `expected`. */
function evaluate(expr: string, series: { series: string; values: string }[], at: string, expected: Expected[]): string {
  const dir = mkdtempSync(join(tmpdir(), "meridian-dashboard-"));
  try {
    const file = join(dir, "test.yml");
    writeFileSync(
      file,
      JSON.stringify({
        rule_files: [],
        evaluation_interval: "1m",
        tests: [{ interval: "1m", input_series: series, promql_expr_test: [{ expr, eval_time: at, exp_samples: expected }] }],
      }),
    );
    const run = spawnSync("promtool", ["test", "rules", file], { encoding: "utf8" });
    if (run.error) throw run.error;
    return run.status === 0 ? "" : `${run.stdout}${run.stderr}`.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const lbInfo = (lb: string, instance: string) => ({
  series: `meridian_lb_config_info{job="meridian-lb",instance="${instance}",lb="${lb}",region="r-${lb}",policy="skylb",cross_region="direct"}`,
  values: "1x20",
});

test('with LB = All, the tuner panels show the fleet tuner (lb="*", console README)', (t) => {
  if (!havePromtool(t)) return;
  const expr = substitute(query("Step size σ", "A"), ["lb-us"]);
  const series = [
    lbInfo("lb-us", "10.0.1.2:8080"),
    { series: 'meridian_console_tuner_sigma{job="meridian-console",instance="c1:3000",lb="*"}', values: "0.3x20" },
  ];
  const out = evaluate(expr, series, "10m", [{ labels: '{job="meridian-console",lb="*"}', value: 0.3 }]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test("with LB = All, a console LB that Prometheus has not seen in the time range (down for > 1 h) is shown down", (t) => {
  if (!havePromtool(t)) return;
  const expr = substitute(query("LB answers the console's probes", "A"), ["lb-us"]);
  const series = [
    lbInfo("lb-us", "10.0.1.2:8080"),
    { series: 'meridian_console_lb_up{job="meridian-console",instance="c1:3000",lb="lb-us"}', values: "1x20" },
    { series: 'meridian_console_lb_up{job="meridian-console",instance="c1:3000",lb="lb-ap"}', values: "0x20" },
  ];
  const out = evaluate(expr, series, "10m", [
    { labels: '{job="meridian-console",lb="lb-us"}', value: 1 },
    { labels: '{job="meridian-console",lb="lb-ap"}', value: 0 },
  ]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test("two consoles on one database (README: Two or more consoles): tuner steps per minute are not doubled", (t) => {
  if (!havePromtool(t)) return;
  const expr = substitute(query("Tuner steps per minute", "A"), ["lb-us"]);
  // Both consoles count the same tuner_steps rows: 1 step a minute.
  const series = [
    lbInfo("lb-us", "10.0.1.2:8080"),
    { series: 'meridian_console_tuner_steps_total{job="meridian-console",instance="c1:3000",lb="lb-us",kind="ab"}', values: "0+1x20" },
    { series: 'meridian_console_tuner_steps_total{job="meridian-console",instance="c2:3000",lb="lb-us",kind="ab"}', values: "0+1x20" },
  ];
  const out = evaluate(expr, series, "15m", [{ labels: '{lb="lb-us"}', value: 1 }]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test("two consoles on one database: one region in fallback is counted once", (t) => {
  if (!havePromtool(t)) return;
  const expr = substitute(query("Regions whose clients go elsewhere", "A"), ["lb-us"]);
  const series: { series: string; values: string }[] = [];
  for (const instance of ["c1:3000", "c2:3000"]) {
    for (const [status, value] of [
      ["assigned", "0"],
      ["fallback", "1"],
      ["unresolved", "0"],
    ]) {
      series.push({
        series: `meridian_console_entrypoint_status{job="meridian-console",instance="${instance}",region="ap",status="${status}"}`,
        values: `${value}x20`,
      });
    }
  }
  const out = evaluate(expr, series, "10m", [
    { labels: '{status="fallback"}', value: 1 },
    { labels: '{status="unresolved"}', value: 0 },
  ]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test("share of successful requests: a request the US LB forwarded to the EU LB is counted once", (t) => {
  if (!havePromtool(t)) return;
  const expr = substitute(query("Share of successful requests by replica", "A"), ["lb-us", "lb-eu"]);
  // 1 req/s served by us-1; 1 req/s forwarded by lb-us to lb-eu, which serves it on eu-1 (both LBs
  // count it: lb-us as replica="peer:lb-eu", lb-eu as replica="eu-1"). Half of the requests each.
  const req = (instance: string, replica: string) => ({
    series: `meridian_lb_requests_total{job="meridian-lb",instance="${instance}",policy="skylb",replica="${replica}",status="200"}`,
    values: "0+60x20",
  });
  const series = [req("10.0.1.2:8080", "us-1"), req("10.0.1.2:8080", "peer:lb-eu"), req("10.0.2.2:8080", "eu-1")];
  const out = evaluate(expr, series, "10m", [
    { labels: '{replica="us-1"}', value: 0.5 },
    { labels: '{replica="eu-1"}', value: 0.5 },
  ]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test('the first failover of an LB shows on "Failovers and failbacks (last hour)"', (t) => {
  if (!havePromtool(t)) return;
  // ConsoleMetrics creates the {lb, trigger} series at 0 once it knows the LB (console-event-counters
  // .test.ts), so Prometheus sees 0 for 10 scrapes, then 1: an increase of 1 (born at 1, it read 0).
  const expr = substitute(query("Failovers and failbacks (last hour)", "A"), ["lb-us"]);
  const series = [
    { series: 'meridian_console_failovers_total{job="meridian-console",instance="c1:3000",lb="lb-us",trigger="automatic"}', values: "0x10 1x30" },
  ];
  const out = evaluate(expr, series, "30m", [{ labels: '{lb="lb-us",trigger="automatic"}', value: 1 }]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test('with LB = lb-us, "Cached prompt tokens: predicted vs reported" shows lb-us only', (t) => {
  if (!havePromtool(t)) return;
  // Grafana substitutes a single selected value as itself.
  const expr = query("Cached prompt tokens: predicted vs reported", "A")
    .replaceAll("$__rate_interval", "4m")
    .replaceAll("$lb_job", "meridian-lb")
    .replaceAll("$lb", "lb-us");
  const tokens = (instance: string, perMinute: number) => ({
    series: `meridian_lb_predicted_cached_tokens_total{job="meridian-lb",instance="${instance}"}`,
    values: `0+${perMinute}x20`,
  });
  const series = [lbInfo("lb-us", "10.0.1.2:8080"), lbInfo("lb-eu", "10.0.2.2:8080"), tokens("10.0.1.2:8080", 60), tokens("10.0.2.2:8080", 6000)];
  const out = evaluate(expr, series, "10m", [{ labels: '{lb="lb-us"}', value: 1 }]);
  assert.equal(out, "", `query: ${expr}\n${out}`);
});

test('"Cached prompt tokens: predicted vs reported" has one unit per axis (tokens/s left, tokens per request right)', () => {
  type UnitPanel = Panel & {
    fieldConfig: { defaults: { unit?: string }; overrides: { matcher: { options: string }; properties: { id: string; value: string }[] }[] };
  };
  const panel = (dashboard.panels as UnitPanel[]).find((p) => p.title === "Cached prompt tokens: predicted vs reported");
  assert.ok(panel);
  assert.equal(panel.fieldConfig.defaults.unit, "suffix: tokens/s");
  const c = panel.fieldConfig.overrides.find((o) => o.matcher.options === "C");
  assert.deepEqual(
    c?.properties.map((p) => `${p.id}=${p.value}`),
    ["unit=suffix: tokens/request", "custom.axisPlacement=right"],
  );
});
