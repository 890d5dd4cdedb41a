// meridian-replay CLI: replays a trace (or the built-in multi-turn workload) open-loop against the
// regional entrypoints and prints the summary JSON to stdout.
//   node packages/workload/bin/meridian-replay.mjs --trace packages/workload/fixtures/mooncake-conversation-first500.jsonl \
//     --entrypoints '{"us-ashburn":"http://127.0.0.1:4201"}' --time-scale 2 --out results.jsonl --summary summary.json
// Exit code 0 when the run completes (request errors are in the summary), 2 on bad arguments, an
// unreadable trace / entrypoint map, or an --out / --summary file that cannot be written.
import { loadReplayConfig, USAGE, UsageRequested, type ReplayConfig } from "./config";
import { entrypointsFromFlag, type EntrypointMap } from "./entrypoints";
import { ReplayOutputError, type ReplayOutputOption } from "./output";
import { runReplay, type RunReplayOptions } from "./run";

const OUTPUT_FLAGS: Record<ReplayOutputOption, string> = { outPath: "--out", summaryPath: "--summary" };

function replayOptions(config: ReplayConfig, entrypoints: EntrypointMap | string, controller: AbortController): RunReplayOptions {
  const options: RunReplayOptions = {
    entrypoints,
    refreshMs: config.refreshMs,
    concurrency: config.concurrency,
    model: config.model,
    requestTimeoutMs: config.timeoutS * 1000,
    ignoreEos: config.ignoreEos,
    timeScale: config.timeScale,
    signal: controller.signal,
  };
  if (config.entrypointsToken) options.entrypointsToken = config.entrypointsToken;
  if (config.apiKey) options.apiKey = config.apiKey;
  if (config.regions) options.regionWeights = config.regions;
  if (config.maxOutputTokens) options.maxOutputTokens = config.maxOutputTokens;
  if (config.maxInputTokens) options.maxInputTokens = config.maxInputTokens;
  if (config.maxRequests) options.maxRequests = config.maxRequests;
  if (config.out) options.outPath = config.out;
  if (config.summary) options.summaryPath = config.summary;
  if (config.trace) {
    options.trace = config.trace;
    if (config.fromMs !== undefined) options.fromMs = config.fromMs;
    if (config.toMs !== undefined) options.toMs = config.toMs;
    if (config.durationS) options.durationMs = config.durationS * 1000;
    options.traceRead = {
      format: config.format,
      onInvalid: config.skipInvalid ? "skip" : "fail",
      onSkip: (error) => process.stderr.write(`skipped ${error.message}\n`),
    };
  } else {
    // A generator never ends by itself: default to one minute unless bounded by requests.
    options.durationMs = (config.durationS ?? (config.maxRequests ? 86_400 : 60)) * 1000;
    options.generator = {
      ...(config.rate !== undefined ? { ratePerS: config.rate } : {}),
      ...(config.sessions !== undefined ? { sessions: config.sessions } : {}),
      ...(config.seed !== undefined ? { seed: config.seed } : {}),
      ...(config.regions ? { regions: config.regions } : {}),
    };
  }
  return options;
}

async function main(): Promise<number> {
  let config: ReplayConfig;
  try {
    config = loadReplayConfig(process.argv.slice(2), process.env);
  } catch (error) {
    if (error instanceof UsageRequested) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    process.stderr.write(`meridian-replay: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  let entrypoints: EntrypointMap | string;
  try {
    entrypoints = await entrypointsFromFlag(config.entrypoints);
  } catch (error) {
    process.stderr.write(`meridian-replay: ${(error as Error).message}\n`);
    return 2;
  }
  const controller = new AbortController();
  // Ctrl-C ends the run early but still prints the summary of what was sent.
  process.once("SIGINT", () => controller.abort());
  process.once("SIGTERM", () => controller.abort());
  try {
    const summary = await runReplay(replayOptions(config, entrypoints, controller));
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof ReplayOutputError)) {
      process.stderr.write(`meridian-replay: ${(error as Error).message}\n`);
      return 2;
    }
    // A file that failed mid-run (a full disk) loses that file, not the run's summary.
    if (error.summary) process.stdout.write(`${JSON.stringify(error.summary, null, 2)}\n`);
    process.stderr.write(`meridian-replay: ${OUTPUT_FLAGS[error.option]}: ${error.message}\n`);
    return 2;
  }
}

process.exitCode = await main();
