// meridian-sim sweep: policies across time scales, with the saturation verdict (the paper's Table 3).

import { DEFAULT_SATURATION_RULE, DEFAULT_SWEEP_POLICIES, ONLINE_GORGO, sweep, type SaturationRule } from "../../fleet";
import { parseNumberList, UsageError, type FlagReader } from "../args";
import { describeRun, loadWorkload, progressReporter, readCommon, readPolicies, readTuner, readWeights, writeJson } from "../common";
import { fmtFixed, fmtMs, fmtSeconds, formatTable } from "../format";

export async function runSweep(flags: FlagReader): Promise<void> {
  // readCommon would take --time-scale (and busy) as the run's one scale; sweep runs each of --time-scales.
  if (flags.has("time-scale")) throw new UsageError("--time-scale does not apply to sweep: it runs every scale of --time-scales");
  const common = readCommon(flags);
  const scalesRaw = flags.string("time-scales");
  if (scalesRaw === undefined) throw new UsageError("--time-scales 1,2,3 is required for sweep");
  const scales = parseNumberList("time-scales", scalesRaw, { exclusiveMin: 0 });
  const policies = readPolicies(flags, DEFAULT_SWEEP_POLICIES);
  const weights = readWeights(flags);
  const tuner = readTuner(flags, weights, policies.includes(ONLINE_GORGO));
  const e2eBound = flags.number("saturation-e2e-p95-ms", { exclusiveMin: 0 });
  const rule: SaturationRule = { ...DEFAULT_SATURATION_RULE, ...(e2eBound !== undefined ? { e2eP95Ms: e2eBound } : {}) };
  flags.rejectUnknown();
  // The same requests per scale, inter-arrival times multiplied.
  const workload = await loadWorkload(common);
  const json = sweep(
    { spec: common.spec, seed: common.seed, weights, index: common.index, onProgress: progressReporter(common.quiet) },
    scales,
    policies,
    tuner,
    (scale) => workload.at(scale),
    rule,
  );
  if (common.json) return writeJson({ ...json, dropped_too_long: workload.droppedTooLong });
  // Every scale runs the same requests (the window's rows less those dropped as too long), re-timed.
  console.log(describeRun(common, scales, workload.at(1).length, workload.droppedTooLong));
  console.log(
    `saturated = p95 E2E > ${rule.e2eP95Ms} ms, or requests waiting for admission at ≥ ${rule.queuedScrapeFraction * 100}% of a replica's scrapes, or a backlog draining > ${rule.drainMs} ms after the last arrival, or any request refused by an LB\n`,
  );
  console.log(
    formatTable(
      ["time_scale", "policy", "input tok/s", "TTFT p95 (ms)", "E2E p95 (s)", "ITL p50", "saturated?"],
      json.rows.map((r) => [
        String(r.time_scale),
        r.policy,
        fmtMs(r.input_tokens_per_s),
        fmtMs(r.ttft_ms.p95),
        fmtSeconds(r.e2e_ms.p95),
        fmtFixed(r.itl_ms_p50, 1),
        r.saturated ? `yes (${r.saturated_because.join(", ")})` : "no",
      ]),
    ),
  );
}
