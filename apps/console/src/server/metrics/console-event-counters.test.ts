// The console's event counters exist at 0 for an LB before its first event: Prometheus' increase()
// and rate() need a sample before the event, so a series born at 1 would hide an LB's first
// failover (the usual case for a rare event) on "Failovers and failbacks (last hour)".
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { ConsoleMetrics } from "./console-metrics";

const line = (text: string, prefix: string) => text.split("\n").find((l) => l.startsWith(prefix));

test("an LB's failover, failback and push series read 0 before their first event", async () => {
  const metrics = new ConsoleMetrics("test");
  // A console that has pushed a config to lb-us knows lb-us; it has not failed over yet.
  metrics.countConfigPush("lb-us", "acked");
  const before = (await metrics.render()).text;
  const failover = 'meridian_console_failovers_total{lb="lb-us",trigger="automatic"}';
  assert.equal(line(before, failover), `${failover} 0`, "series before the first failover");
  for (const trigger of ["automatic", "operator"]) {
    assert.equal(
      line(before, `meridian_console_failbacks_total{lb="lb-us",trigger="${trigger}"}`),
      `meridian_console_failbacks_total{lb="lb-us",trigger="${trigger}"} 0`,
    );
  }
  for (const result of ["stale", "rejected", "unreachable"]) {
    const series = `meridian_console_config_pushes_total{lb="lb-us",result="${result}"}`;
    assert.equal(line(before, series), `${series} 0`);
  }
  metrics.countFailover("lb-us", true);
  metrics.countFailover("lb-us", true);
  const after = (await metrics.render()).text;
  assert.equal(line(after, failover), `${failover} 2`, "the zero never resets a count");
  assert.equal(
    line(after, 'meridian_console_config_pushes_total{lb="lb-us",result="acked"}'),
    'meridian_console_config_pushes_total{lb="lb-us",result="acked"} 1',
  );
});
