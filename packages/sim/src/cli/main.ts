// meridian-sim: the fleet simulator's command line. A stable contract: the console runs `compare`
// and reads its --json stdout and the `progress N/M` lines on stderr. See packages/sim/README.md.
//
// Exit codes: 0 ok, 2 usage or input error (missing file, bad window, unknown policy, bad weights,
// malformed trace row), 1 anything unexpected.

import { createWriteStream, existsSync, type WriteStream } from "node:fs";
import { dirname, resolve } from "node:path";
import { DEFAULT_WEIGHTS, WEIGHT_BOUNDS, type Weights } from "@meridian/routing";
import type { WeightBounds } from "@meridian/tuner";
import { bundledTracePath, loadTrace, TraceRowError, type TraceRequest } from "@meridian/workload";
import {
  buildSimRequests,
  compare,
  COMPARE_POLICY_NAMES,
  DEFAULT_COMPARE_POLICIES,
  DEFAULT_SATURATION_RULE,
  DEFAULT_SWEEP_POLICIES,
  INDEX_MODES,
  isComparePolicy,
  ONLINE_GORGO,
  PRESETS,
  presetNames,
  sweep,
  tune,
  type ComparePolicyRow,
  type ExperimentBase,
  type FleetSpec,
  type IndexMode,
  type RequestRecord,
  type SaturationRule,
  type TunerSettings,
} from "../fleet";
import { checkTraceFile, FlagReader, parseArgv, parseBounds, parseNumberList, parseWeights, readWindow, UsageError } from "./args";
import { fmtFixed, fmtMs, fmtPercent, fmtSeconds, formatTable } from "./format";

const USAGE = `meridian-sim: discrete-event simulator of a Meridian fleet

Usage:
  meridian-sim compare --trace FILE|bundled [common] [--policies a,b,...] [--weights rtt=0.5,queue=0.1]
                       [--guardrails on|off] [--mode versioned|paper] [--jsonl FILE] [--oracle-gap on|off]
  meridian-sim tune    --trace FILE|bundled [common] [--mode versioned|paper] [--guardrails on|off]
                       [--weights rtt=..,queue=..] [--rtt-bounds LO,HI] [--queue-bounds LO,HI] [--window N] [--hop N]
  meridian-sim sweep   --trace FILE|bundled --time-scales 1,2,3 [common] [--policies a,b,...]
                       [--saturation-e2e-p95-ms MS]

Common: [--from-ms A --to-ms B] [--time-scale S] [--preset ${presetNames().join("|")}] [--seed N]
        [--max-input-tokens N] [--spread-ticks] [--index ${INDEX_MODES.join("|")}] [--json] [--quiet]

--index: how the LBs know what the engines cache. learned (default): their prefix indexes, sized
from the engines' KV capacity and corrected by cached-token reports; static: TTL and capacity only
(the index before it learned); oracle: the engines' true cache state at dispatch (an upper bound).
compare also runs each policy with the oracle and reports the TTFT gap to it (--oracle-gap off skips).

Policies: ${COMPARE_POLICY_NAMES.join(", ")} (gorgo-online = gorgo with the online tuner).
Progress goes to stderr as lines "progress DONE/TOTAL LABEL" (suppressed by --quiet).`;

interface CommonOptions {
  spec: FleetSpec;
  tracePath: string;
  fromMs: number | undefined;
  toMs: number | undefined;
  timeScale: number;
  seed: number;
  json: boolean;
  quiet: boolean;
  spreadTicks: boolean;
  index: IndexMode;
}

function readCommon(flags: FlagReader): CommonOptions {
  const trace = flags.string("trace");
  if (trace === undefined) throw new UsageError("--trace FILE is required (or --trace bundled for the bundled fixture)");
  const tracePath = trace === "bundled" ? bundledTracePath() : trace;
  checkTraceFile(tracePath);
  const { fromMs, toMs } = readWindow(flags);
  const timeScale = flags.number("time-scale", { exclusiveMin: 0 }) ?? 1;
  const presetName = flags.string("preset") ?? "paper";
  const makePreset = PRESETS[presetName];
  if (!makePreset) throw new UsageError(`unknown preset "${presetName}" (expected one of ${presetNames().join(", ")})`);
  const spec = makePreset();
  const maxInput = flags.number("max-input-tokens", { min: 1, integer: true });
  if (maxInput !== undefined) spec.maxInputTokens = maxInput;
  const seed = flags.number("seed", { integer: true }) ?? 1;
  const index = flags.string("index") ?? "learned";
  if (!(INDEX_MODES as readonly string[]).includes(index)) throw new UsageError(`--index: expected one of ${INDEX_MODES.join(", ")}, got "${index}"`);
  return {
    spec,
    tracePath,
    fromMs,
    toMs,
    timeScale,
    seed,
    json: flags.bool("json"),
    quiet: flags.bool("quiet"),
    spreadTicks: flags.bool("spread-ticks"),
    index: index as IndexMode,
  };
}

function readPolicies(flags: FlagReader, fallback: readonly string[]): string[] {
  const raw = flags.string("policies");
  if (raw === undefined) return [...fallback];
  const names = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 0) throw new UsageError("--policies: expected a comma-separated list of policy names");
  for (const name of names) {
    if (!isComparePolicy(name)) throw new UsageError(`unknown policy "${name}" (expected one of ${COMPARE_POLICY_NAMES.join(", ")})`);
  }
  if (new Set(names).size !== names.length) throw new UsageError("--policies: a policy is listed twice");
  return names;
}

function readWeights(flags: FlagReader): Weights {
  const raw = flags.string("weights");
  return raw === undefined ? { ...DEFAULT_WEIGHTS } : parseWeights(raw, DEFAULT_WEIGHTS);
}

/** Tuner settings; the starting weights must lie inside the bounds only when a tuner will run. */
function readTuner(flags: FlagReader, initial: Weights, tunerRuns: boolean): TunerSettings {
  const mode = flags.string("mode") ?? "versioned";
  if (mode !== "versioned" && mode !== "paper") throw new UsageError(`--mode: expected versioned or paper, got "${mode}"`);
  const guardrails = flags.onOff("guardrails", true);
  const rttRaw = flags.string("rtt-bounds");
  const queueRaw = flags.string("queue-bounds");
  const bounds: WeightBounds = {
    rtt: rttRaw === undefined ? WEIGHT_BOUNDS.rtt : parseBounds("rtt-bounds", rttRaw),
    queue: queueRaw === undefined ? WEIGHT_BOUNDS.queue : parseBounds("queue-bounds", queueRaw),
  };
  for (const name of ["rtt", "queue"] as const) {
    const [lo, hi] = bounds[name];
    if (!(lo > 0)) throw new UsageError(`--${name}-bounds: the lower bound must be > 0 (the tuner mutates in log space)`);
    if (tunerRuns && (initial[name] < lo || initial[name] > hi)) {
      throw new UsageError(`--weights: ${name}=${initial[name]} is outside the tuner bounds [${lo}, ${hi}]`);
    }
  }
  const window = flags.number("window", { min: 1, integer: true });
  const hop = flags.number("hop", { min: 1, integer: true });
  return {
    evaluation: mode,
    guardrails,
    bounds,
    ...(window !== undefined ? { window } : {}),
    ...(hop !== undefined ? { hop } : {}),
  };
}

async function loadWorkload(common: CommonOptions, timeScale: number): Promise<TraceRequest[]> {
  let rows: TraceRequest[];
  try {
    rows = await loadTrace(common.tracePath, {
      ...(common.fromMs !== undefined ? { fromMs: common.fromMs } : {}),
      ...(common.toMs !== undefined ? { toMs: common.toMs } : {}),
      timeScale,
    });
  } catch (error) {
    if (error instanceof TraceRowError) throw new UsageError(`bad trace row: ${error.message}`);
    if (error instanceof Error && /trace (file not found|path is not a file)/.test(error.message)) throw new UsageError(error.message);
    throw error;
  }
  if (rows.length === 0) {
    throw new UsageError(`no requests in the window [${common.fromMs ?? 0}, ${common.toMs ?? "end"}) of ${common.tracePath}`);
  }
  return rows;
}

/** stderr progress: machine-readable `progress DONE/TOTAL LABEL`, only when the percentage moves. */
function progressReporter(quiet: boolean): ExperimentBase["onProgress"] {
  if (quiet) return undefined;
  let lastPercent = -1;
  return (done, total, label) => {
    const percent = Math.floor((done / total) * 100);
    if (percent === lastPercent && done !== total) return;
    lastPercent = percent;
    process.stderr.write(`progress ${done}/${total} ${label}\n`);
  };
}

function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function policyTable(rows: readonly ComparePolicyRow[]): string {
  return formatTable(
    ["policy", "refused", "TTFT p50", "p95", "p99 (ms)", "E2E p50", "p95", "p99 (s)", "ITL p50", "rps", "cache hit", "pred acc", "vs oracle", "max share"],
    rows.map((r) => [
      r.name,
      String(r.failed),
      fmtMs(r.ttft_ms.p50),
      fmtMs(r.ttft_ms.p95),
      fmtMs(r.ttft_ms.p99),
      fmtSeconds(r.e2e_ms.p50),
      fmtSeconds(r.e2e_ms.p95),
      fmtSeconds(r.e2e_ms.p99),
      fmtFixed(r.itl_ms_p50, 1),
      fmtFixed(r.throughput_rps, 2),
      fmtPercent(r.cache_hit_rate),
      fmtPercent(r.prediction_accuracy),
      r.oracle?.ttft_p95_gap == null ? "—" : `${r.oracle.ttft_p95_gap >= 0 ? "+" : ""}${fmtPercent(r.oracle.ttft_p95_gap)}`,
      fmtPercent(r.max_share),
    ]),
  );
}

function describeRun(common: CommonOptions, requests: number, dropped: number): string {
  const window = `[${common.fromMs ?? 0}, ${common.toMs ?? "end"}) ms`;
  const droppedNote = dropped > 0 ? `, ${dropped} dropped above ${common.spec.maxInputTokens} input tokens` : "";
  const ticks = common.spreadTicks ? ", same-timestamp requests spread over their tick" : "";
  return `preset ${common.spec.name}, trace ${common.tracePath} window ${window}, time_scale ${common.timeScale}, ${requests} requests${droppedNote}${ticks}, seed ${common.seed}\nsession key: first 2 blocks of hash_ids (block 0 is a system prompt every request shares)`;
}

async function runCompare(flags: FlagReader): Promise<void> {
  const common = readCommon(flags);
  const policies = readPolicies(flags, DEFAULT_COMPARE_POLICIES);
  const weights = readWeights(flags);
  const tuner = readTuner(flags, weights, policies.includes(ONLINE_GORGO));
  const oracleGap = flags.onOff("oracle-gap", true);
  const jsonlPath = flags.string("jsonl");
  if (jsonlPath !== undefined && !existsSync(dirname(resolve(jsonlPath)))) {
    throw new UsageError(`--jsonl: directory ${dirname(resolve(jsonlPath))} does not exist`);
  }
  flags.rejectUnknown();
  const rows = await loadWorkload(common, common.timeScale);
  const built = buildSimRequests(rows, common.spec, { spreadTicks: common.spreadTicks });
  let jsonl: WriteStream | undefined;
  if (jsonlPath !== undefined) jsonl = createWriteStream(jsonlPath);
  const { json } = compare(
    { spec: common.spec, requests: built.requests, seed: common.seed, weights, index: common.index, onProgress: progressReporter(common.quiet) },
    policies,
    tuner,
    {
      oracle: oracleGap,
      ...(jsonl
        ? { onRecords: (policy: string, records: RequestRecord[]) => records.forEach((r) => jsonl!.write(`${JSON.stringify({ policy, ...r })}\n`)) }
        : {}),
    },
  );
  if (jsonl) await new Promise<void>((resolve, reject) => jsonl!.end((err?: Error | null) => (err ? reject(err) : resolve())));
  if (common.json) return writeJson({ ...json, dropped_too_long: built.droppedTooLong });
  console.log(describeRun(common, built.requests.length, built.droppedTooLong));
  console.log(`weights for gorgo: rtt=${weights.rtt}, queue=${weights.queue}; index: ${json.index}\n`);
  console.log(policyTable(json.policies));
  console.log("\nrequests per replica:");
  console.log(
    formatTable(
      ["policy", ...Object.keys(json.policies[0]?.replica_share ?? {})],
      json.policies.map((p) => [p.name, ...Object.values(p.replica_share).map((s) => fmtPercent(s))]),
    ),
  );
  for (const p of json.policies) {
    if (p.tuner)
      console.log(
        `\n${p.name}: tuned to rtt=${p.tuner.weights.rtt}, queue=${p.tuner.weights.queue} in ${p.tuner.steps} steps (converged: ${p.tuner.converged})`,
      );
  }
}

async function runTune(flags: FlagReader): Promise<void> {
  const common = readCommon(flags);
  const weights = readWeights(flags);
  const tuner = readTuner(flags, weights, true);
  flags.rejectUnknown();
  const rows = await loadWorkload(common, common.timeScale);
  const built = buildSimRequests(rows, common.spec, { spreadTicks: common.spreadTicks });
  const { json } = tune(
    { spec: common.spec, requests: built.requests, seed: common.seed, weights, index: common.index, onProgress: progressReporter(common.quiet) },
    tuner,
  );
  if (common.json) return writeJson(json);
  console.log(describeRun(common, built.requests.length, built.droppedTooLong));
  console.log(`tuner: ${tuner.evaluation} evaluation, guardrails ${tuner.guardrails ? "on" : "off"}, start rtt=${weights.rtt} queue=${weights.queue}\n`);
  console.log(
    formatTable(
      ["step", "samples", "kind", "W_rtt", "W_queue", "p95 TTFT", "p95 E2E", "max share", "verdict", "sigma", "incumbent"],
      json.trajectory.map((t) => [
        String(t.step),
        String(t.samples),
        t.kind,
        fmtFixed(t.weights.rtt, 3),
        fmtFixed(t.weights.queue, 3),
        fmtMs(t.p95_ttft_ms),
        fmtMs(t.e2e_p95_ms),
        fmtPercent(t.max_share),
        t.accepted ? "accepted" : t.guardrail === "pass" ? "rejected" : `guardrail:${t.guardrail}`,
        fmtFixed(t.sigma, 3),
        `${fmtFixed(t.incumbent.rtt, 3)}/${fmtFixed(t.incumbent.queue, 3)}`,
      ]),
    ),
  );
  console.log(
    `\nlearned weights: rtt=${json.weights.rtt}, queue=${json.weights.queue}; best after ${json.samples_to_best} samples; ${json.steps} steps; converged: ${json.converged}`,
  );
  console.log(
    `tuning run: TTFT p95 ${fmtMs(json.summary.ttft_ms.p95)} ms, E2E p95 ${fmtSeconds(json.summary.e2e_ms.p95)} s, max share ${fmtPercent(json.summary.max_share)}`,
  );
}

async function runSweep(flags: FlagReader): Promise<void> {
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
  const baseRows = await loadWorkload(common, 1);
  // Re-time the window's rows per scale: the same requests, inter-arrival times multiplied.
  const workloadAt = (scale: number) => {
    const first = baseRows[0]!.timestampMs;
    const scaled = baseRows.map((r) => ({ ...r, timestampMs: (r.timestampMs - first) * scale }));
    return buildSimRequests(scaled, common.spec, { spreadTicks: common.spreadTicks }).requests;
  };
  const json = sweep(
    { spec: common.spec, seed: common.seed, weights, index: common.index, onProgress: progressReporter(common.quiet) },
    scales,
    policies,
    tuner,
    workloadAt,
    rule,
  );
  if (common.json) return writeJson(json);
  console.log(describeRun(common, baseRows.length, 0));
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

export async function main(argv: readonly string[]): Promise<number> {
  try {
    const raw = parseArgv(argv);
    const flags = new FlagReader(raw.flags);
    if (raw.command === undefined || raw.command === "help" || flags.bool("help")) {
      console.log(USAGE);
      return raw.command === undefined && !flags.bool("help") ? 2 : 0;
    }
    if (raw.positionals.length > 0) throw new UsageError(`unexpected argument "${raw.positionals[0]}"`);
    switch (raw.command) {
      case "compare":
        await runCompare(flags);
        break;
      case "tune":
        await runTune(flags);
        break;
      case "sweep":
        await runSweep(flags);
        break;
      default:
        throw new UsageError(`unknown command "${raw.command}" (expected compare, tune or sweep)`);
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`meridian-sim: error: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`meridian-sim: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

// Run when executed (through bin/meridian-sim.mjs or `tsx src/cli/main.ts`), not when imported by tests.
const invokedDirectly = process.argv[1] !== undefined && /meridian-sim(\.mjs)?$|cli[\\/]main\.ts$/.test(process.argv[1]);
if (invokedDirectly) {
  process.exitCode = await main(process.argv.slice(2));
}
