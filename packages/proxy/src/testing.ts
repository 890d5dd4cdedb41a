// @meridian/proxy/testing: for tests of the LB's and the console's /metrics. `promtool check metrics`
// is Prometheus' own linter (naming, units, help text, counter suffixes). It comes with Debian's
// `prometheus` package, which .ci/run installs when it is missing. A machine without it skips the
// check and says why; in CI (CI set and not "0"/"false") a missing promtool fails the test instead,
// so a broken install cannot pass as a skip.
import { spawnSync } from "node:child_process";
import type { TestContext } from "node:test";

function ciRequiresPromtool(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== "" && ci !== "0" && ci.toLowerCase() !== "false";
}

/** True when promtool can run; otherwise skips the test, or throws in CI. */
export function havePromtool(t: TestContext): boolean {
  const probe = spawnSync("promtool", ["--version"], { encoding: "utf8" });
  if (!probe.error) return true;
  if (ciRequiresPromtool()) throw new Error("promtool is not on PATH, and CI requires it (.ci/run installs Debian's prometheus package)");
  t.skip("promtool is not on PATH (Debian: `apt-get install prometheus`; CI=1 makes this a failure)");
  return false;
}

/** promtool's findings on an exposition text: "" when it is clean. */
export function promtoolFindings(text: string): string {
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (check.error) throw check.error;
  const output = `${check.stdout}${check.stderr}`.trim();
  return check.status === 0 && output === "" ? "" : output || `promtool exited ${check.status}`;
}

/** `name` is one of `families`, or a histogram's or summary's series of one (`_bucket`, `_sum`, `_count`). */
export function familyExports(families: ReadonlySet<string>, name: string): boolean {
  if (families.has(name)) return true;
  const base = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
  return base !== undefined && families.has(base);
}

/** The metric family names of an exposition text (its # TYPE lines). */
export function metricFamilies(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) names.add(match[1] as string);
  return names;
}
