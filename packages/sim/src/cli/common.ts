// What every meridian-sim command shares: the common flags, the tuner flags, loading and shaping the
// workload (window, time scale, prompt length, client-mix shift), progress lines and JSON output.

import { DEFAULT_WEIGHTS, WEIGHT_BOUNDS, type Weights } from "@meridian/routing";
import { DEFAULT_TUNER_CONFIG, type WeightBounds } from "@meridian/tuner";
import { bundledTracePath, loadTrace, SESSION_KEY_RULE, TraceRowError, type TraceRequest } from "@meridian/workload";
import {
  buildSimRequests,
  busyButClears,
  busyLoadProblem,
  COMPARE_POLICY_NAMES,
  INDEX_MODES,
  isComparePolicy,
  ONLINE_GORGO,
  PRESETS,
  presetNames,
  scalePrompts,
  shiftClientMix,
  type BusyLoad,
  type ExperimentBase,
  type FleetSpec,
  type IndexMode,
  type SimRequest,
  type TunerSettings,
} from "../fleet";
import { checkTraceFile, type FlagReader, parseBounds, parseRegionWeights, parseWeights, readWindow, UsageError } from "./args";

/** Seeds are 32-bit (fleet/seeds.ts mixes them as such), so two seeds that differ are two runs. */
const SEED_MAX = 2 ** 32 - 1;

export interface CommonOptions {
  spec: FleetSpec;
  tracePath: string;
  fromMs: number | undefined;
  toMs: number | undefined;
  /** A number, or "busy": the busy-but-clears load (fleet/regimes.ts), resolved by loadWorkload. */
  timeScale: number | "busy";
  seed: number;
  json: boolean;
  quiet: boolean;
  spreadTicks: boolean;
  /** Every prompt this many times as long (at least one block); 1 keeps the trace's prompts. */
  promptFactor: number;
  /** Client regions' weights after the shift, and when it happens (fraction of the workload's span). */
  shift: { clients: Record<string, number>; atFraction: number } | null;
  /** How the LBs know what the engines cache (learned, static or oracle). */
  index: IndexMode;
}

export function readCommon(flags: FlagReader): CommonOptions {
  const trace = flags.string("trace");
  if (trace === undefined) throw new UsageError("--trace FILE is required (or --trace bundled for the bundled fixture)");
  const tracePath = trace === "bundled" ? bundledTracePath() : trace;
  checkTraceFile(tracePath);
  const { fromMs, toMs } = readWindow(flags);
  const timeScale = flags.string("time-scale") === "busy" ? "busy" : (flags.number("time-scale", { exclusiveMin: 0 }) ?? 1);
  const presetName = flags.string("preset") ?? "paper";
  const makePreset = PRESETS[presetName];
  if (!makePreset) throw new UsageError(`unknown preset "${presetName}" (expected one of ${presetNames().join(", ")})`);
  const spec = makePreset();
  const maxInput = flags.number("max-input-tokens", { min: 1, integer: true });
  if (maxInput !== undefined) spec.maxInputTokens = maxInput;
  const seed = flags.number("seed", { integer: true, min: 0, max: SEED_MAX }) ?? 1;
  const promptFactor = flags.number("prompt-factor", { exclusiveMin: 0 }) ?? 1;
  const shiftRaw = flags.string("shift-clients");
  const atFraction = flags.number("shift-at", { min: 0 });
  if (atFraction !== undefined && (atFraction > 1 || shiftRaw === undefined)) {
    throw new UsageError(shiftRaw === undefined ? "--shift-at needs --shift-clients" : `--shift-at: expected a fraction in [0, 1], got ${atFraction}`);
  }
  const index = flags.string("index") ?? "learned";
  if (!(INDEX_MODES as readonly string[]).includes(index)) throw new UsageError(`--index: expected one of ${INDEX_MODES.join(", ")}, got "${index}"`);
  const shift = shiftRaw === undefined ? null : { clients: parseRegionWeights("shift-clients", shiftRaw, spec.regions), atFraction: atFraction ?? 0.5 };
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
    promptFactor,
    shift,
    index: index as IndexMode,
  };
}

export function readPolicies(flags: FlagReader, fallback: readonly string[]): string[] {
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

export function readWeights(flags: FlagReader): Weights {
  const raw = flags.string("weights");
  return raw === undefined ? { ...DEFAULT_WEIGHTS } : parseWeights(raw, DEFAULT_WEIGHTS);
}

export function readBounds(flags: FlagReader, prefix: "" | "grid-" = ""): WeightBounds {
  const rttRaw = flags.string(`${prefix}rtt-bounds`);
  const queueRaw = flags.string(`${prefix}queue-bounds`);
  const bounds: WeightBounds = {
    rtt: rttRaw === undefined ? WEIGHT_BOUNDS.rtt : parseBounds(`${prefix}rtt-bounds`, rttRaw),
    queue: queueRaw === undefined ? WEIGHT_BOUNDS.queue : parseBounds(`${prefix}queue-bounds`, queueRaw),
  };
  for (const name of ["rtt", "queue"] as const) {
    if (!(bounds[name][0] > 0)) throw new UsageError(`--${prefix}${name}-bounds: the lower bound must be > 0 (weights are searched in log space)`);
  }
  return bounds;
}

/** The flags that configure the online tuner (gorgo-online in compare and sweep, and tune). */
const TUNER_FLAGS = ["mode", "tuner-scope", "guardrails", "rtt-bounds", "queue-bounds", "window", "hop"] as const;

/**
 * Tuner settings; the starting weights must lie inside the bounds only when a tuner will run. When
 * none will (compare or sweep without gorgo-online), a tuner flag is an error: it would change nothing.
 */
export function readTuner(flags: FlagReader, initial: Weights, tunerRuns: boolean): TunerSettings {
  if (!tunerRuns) {
    const given = TUNER_FLAGS.find((name) => flags.has(name));
    if (given !== undefined) {
      throw new UsageError(`--${given} configures the online tuner, which runs only for ${ONLINE_GORGO}: add it to --policies or drop the flag`);
    }
  }
  const mode = flags.string("mode") ?? "ab";
  if (mode !== "ab" && mode !== "paper") throw new UsageError(`--mode: expected ab or paper, got "${mode}"`);
  const scope = flags.string("tuner-scope") ?? "lb";
  if (scope !== "lb" && scope !== "fleet") throw new UsageError(`--tuner-scope: expected lb or fleet, got "${scope}"`);
  const guardrails = flags.onOff("guardrails", true);
  const bounds = readBounds(flags);
  for (const name of ["rtt", "queue"] as const) {
    const [lo, hi] = bounds[name];
    if (tunerRuns && (initial[name] < lo || initial[name] > hi)) {
      throw new UsageError(`--weights: ${name}=${initial[name]} is outside the tuner bounds [${lo}, ${hi}]`);
    }
  }
  const window = flags.number("window", { min: 1, integer: true });
  const hop = flags.number("hop", { min: 1, integer: true });
  // Said here as a usage error (exit 2, one line) rather than by the tuner mid-run (a stack trace).
  if (mode !== "paper" && (window !== undefined || hop !== undefined)) throw new UsageError("--window and --hop apply to --mode paper only");
  if (hop !== undefined && hop > (window ?? DEFAULT_TUNER_CONFIG.window)) {
    throw new UsageError(`--hop ${hop} must not exceed --window ${window ?? DEFAULT_TUNER_CONFIG.window}`);
  }
  return {
    evaluation: mode,
    guardrails,
    scope,
    bounds,
    ...(window !== undefined ? { window } : {}),
    ...(hop !== undefined ? { hop } : {}),
  };
}

async function loadRows(common: CommonOptions): Promise<TraceRequest[]> {
  let rows: TraceRequest[];
  try {
    rows = await loadTrace(common.tracePath, {
      ...(common.fromMs !== undefined ? { fromMs: common.fromMs } : {}),
      ...(common.toMs !== undefined ? { toMs: common.toMs } : {}),
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

export interface Workload {
  /** Builds the requests at a time scale: the window's rows re-timed, then the prompt and client transforms. */
  at(timeScale: number): SimRequest[];
  rows: number;
  droppedTooLong: number;
}

export async function loadWorkload(common: CommonOptions): Promise<Workload> {
  const rows = await loadRows(common);
  const first = rows[0]!.timestampMs;
  let dropped = 0;
  const at = (timeScale: number): SimRequest[] => {
    const scaled = rows.map((r) => ({ ...r, timestampMs: (r.timestampMs - first) * timeScale }));
    const built = buildSimRequests(scaled, common.spec, { spreadTicks: common.spreadTicks });
    dropped = built.droppedTooLong;
    let requests = common.promptFactor === 1 ? built.requests : scalePrompts(built.requests, common.promptFactor);
    if (common.shift !== null && requests.length > 0) {
      const start = requests[0]!.arrivalMs;
      const end = requests[requests.length - 1]!.arrivalMs;
      requests = shiftClientMix(requests, start + common.shift.atFraction * (end - start), common.shift.clients);
    }
    return requests;
  };
  // Said as a usage error (exit 2), as an empty window is: a run of no requests measures nothing.
  if (at(1).length === 0) {
    const limit =
      dropped === rows.length
        ? `: all ${rows.length} requests of the window have more than ${common.spec.maxInputTokens} input tokens (--max-input-tokens)`
        : "";
    throw new UsageError(`no requests left to simulate${limit}`);
  }
  return {
    at,
    rows: rows.length,
    get droppedTooLong() {
      return dropped;
    },
  };
}

/** The command's time scale: the number given, or the busy-but-clears load found on this workload. */
export function resolveTimeScale(common: CommonOptions, workload: Workload): { timeScale: number; busy: BusyLoad | null } {
  if (common.timeScale !== "busy") return { timeScale: common.timeScale, busy: null };
  const problem = busyLoadProblem(workload.at(1));
  if (problem !== null)
    throw new UsageError(`--time-scale busy cannot pick a load: ${problem}; use a wider --from-ms/--to-ms window or a numeric --time-scale`);
  const busy = busyButClears(common.spec, (scale) => workload.at(scale), { seed: common.seed });
  return { timeScale: busy.timeScale, busy };
}

/** stderr progress: machine-readable `progress DONE/TOTAL LABEL`, only when the percentage moves. */
export function progressReporter(quiet: boolean): ExperimentBase["onProgress"] {
  if (quiet) return undefined;
  let lastPercent = -1;
  return (done, total, label) => {
    const percent = Math.floor((done / total) * 100);
    if (percent === lastPercent && done !== total) return;
    lastPercent = percent;
    process.stderr.write(`progress ${done}/${total} ${label}\n`);
  };
}

export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** One line on the run; `timeScale` is the command's scale, or sweep's list of them. */
export function describeRun(common: CommonOptions, timeScale: number | readonly number[], requests: number, dropped: number): string {
  const window = `[${common.fromMs ?? 0}, ${common.toMs ?? "end"}) ms`;
  const droppedNote = dropped > 0 ? `, ${dropped} dropped above ${common.spec.maxInputTokens} input tokens` : "";
  const ticks = common.spreadTicks ? ", same-timestamp requests spread over their tick" : "";
  const prompts = common.promptFactor === 1 ? "" : `, prompts ×${common.promptFactor} (at least one block)`;
  const shift = common.shift === null ? "" : `, client mix → ${JSON.stringify(common.shift.clients)} at ${common.shift.atFraction} of the span`;
  const busy = common.timeScale === "busy" ? " (busy but clears)" : "";
  const scale =
    typeof timeScale === "number"
      ? `time_scale ${Number(timeScale.toPrecision(6))}${busy}`
      : `time_scales [${timeScale.map((s) => Number(s.toPrecision(6))).join(", ")}]`;
  return `preset ${common.spec.name}, trace ${common.tracePath} window ${window}, ${scale}, ${requests} requests${droppedNote}${ticks}${prompts}${shift}, seed ${common.seed}\nsession key: ${SESSION_KEY_RULE}`;
}

/** The fields of CommonOptions that experiments need. */
export function experimentBase(common: CommonOptions, requests: readonly SimRequest[], weights: Weights): ExperimentBase {
  return { spec: common.spec, requests, seed: common.seed, weights, index: common.index, onProgress: progressReporter(common.quiet) };
}
