// The meridian-replay process configuration: command-line flags plus the two secrets it may take
// from the environment, validated once with zod. Nothing else in the process reads process.env.
import { parseArgs } from "node:util";
import { z } from "zod";
import { MAX_TIMER_MS } from "./timer-limit";

export const USAGE = `usage: meridian-replay (--trace FILE | --generator multi-turn) --entrypoints JSON|URL|FILE [options]

  --trace FILE              Mooncake / ART-Chat JSONL trace to replay
  --format F                auto (default) | mooncake | art-chat
  --skip-invalid            skip bad trace rows instead of failing (each reported on stderr,
                            counted as skippedInvalid in the summary)
  --generator multi-turn    built-in multi-turn chat workload instead of a trace
  --rate R                  generator: mean requests per second (default 2)
  --sessions N              generator: concurrently active sessions (default 16)
  --seed N                  generator: seed (default 1)
  --entrypoints X           region→URL map as JSON, a JSON file, or a URL serving the map
  --refresh-ms N            re-fetch interval for a map URL (default 5000)
  --regions a=1,b=2         region weights (default: equal over the map's regions)
  --time-scale S            multiply inter-arrival times (2.0 halves the load; default 1)
  --from-ms A --to-ms B     trace window on the source timestamps, [A, B), re-based to 0
  --duration-s N            stop scheduling after N seconds (generator default 60)
  --max-requests N          stop after N requests
  --concurrency N           max requests in flight (default 64)
  --model NAME              model field of each request (default "meridian-demo", the model the
                            demo fleet and meridian-engine serve; give your engines' model otherwise)
  --max-output-tokens N     cap max_tokens (e.g. 128 as in the paper)
  --max-input-tokens N      skip trace rows with longer prompts (the paper dropped > 24000)
  --ignore-eos              ask engines to generate exactly max_tokens
  --timeout-s N             per-request timeout (default 300)
  --out FILE                per-request JSONL
  --summary FILE            summary JSON (also printed to stdout)
env: MERIDIAN_ENTRYPOINTS_TOKEN (bearer for the map URL), MERIDIAN_API_KEY (bearer for the LBs)`;

/** The model the demo fleet's LBs route and meridian-engine serves by default (DEMO_MODEL in
 * @meridian/sim/demo-network; not imported, since sim depends on this package). An LB answers a
 * model none of its replicas serve with 404 model_not_found, so a default of its own would fail. */
export const DEFAULT_REPLAY_MODEL = "meridian-demo";

const positiveNumber = z.coerce.number().positive();
const positiveInt = z.coerce.number().int().positive();
const nonNegative = z.coerce.number().nonnegative();
const timerLimit = (flag: string, max: number, unit: string) => `${flag} must be at most ${max} ${unit} (2^31-1 ms, the longest delay a Node timer holds)`;

/** Flags that mean something in one mode only: given in the other, they would be silently ignored. */
const TRACE_ONLY = { fromMs: "--from-ms", toMs: "--to-ms", skipInvalid: "--skip-invalid", maxInputTokens: "--max-input-tokens" } as const;
const GENERATOR_ONLY = { rate: "--rate", sessions: "--sessions", seed: "--seed" } as const;

const RegionWeightsFlag = z.string().transform((text, ctx) => {
  const weights: Record<string, number> = {};
  for (const part of text.split(",").filter(Boolean)) {
    const [name = "", weight = "1"] = part.split("=");
    // An empty weight ("us=") is an error, not Number("") = 0, which silently sent the region nothing.
    const value = weight.trim() === "" ? Number.NaN : Number(weight);
    if (name.trim() === "" || !(value >= 0)) {
      ctx.addIssue({ code: "custom", message: `bad region weight "${part}" (expected name=weight)` });
      return z.NEVER;
    }
    weights[name.trim()] = value;
  }
  return weights;
});

export const ReplayConfigSchema = z
  .object({
    trace: z.string().min(1).optional(),
    format: z.enum(["auto", "mooncake", "art-chat"]).default("auto"),
    skipInvalid: z.boolean().default(false),
    generator: z.literal("multi-turn").optional(),
    rate: positiveNumber.optional(),
    sessions: positiveInt.optional(),
    seed: z.coerce.number().int().optional(),
    entrypoints: z.string().min(1, "--entrypoints is required"),
    refreshMs: positiveInt.max(MAX_TIMER_MS, timerLimit("--refresh-ms", MAX_TIMER_MS, "ms")).default(5000),
    regions: RegionWeightsFlag.optional(),
    timeScale: positiveNumber.default(1),
    fromMs: nonNegative.optional(),
    toMs: nonNegative.optional(),
    durationS: positiveNumber.optional(),
    maxRequests: positiveInt.optional(),
    concurrency: positiveInt.default(64),
    model: z.string().min(1).default(DEFAULT_REPLAY_MODEL),
    maxOutputTokens: positiveInt.optional(),
    maxInputTokens: positiveInt.optional(),
    ignoreEos: z.boolean().default(false),
    timeoutS: positiveNumber.max(MAX_TIMER_MS / 1000, timerLimit("--timeout-s", MAX_TIMER_MS / 1000, "s")).default(300),
    out: z.string().min(1).optional(),
    summary: z.string().min(1).optional(),
    entrypointsToken: z.string().min(1).optional(),
    apiKey: z.string().min(1).optional(),
  })
  .refine((c) => (c.trace === undefined) !== (c.generator === undefined), {
    message: "give exactly one of --trace FILE or --generator multi-turn",
  })
  .superRefine((c, ctx) => {
    // --format and --skip-invalid default to a value; only a value the user changed counts.
    const given = (key: string, value: unknown): boolean => value !== undefined && value !== false && !(key === "format" && value === "auto");
    const wrong =
      c.trace !== undefined
        ? { flags: { ...GENERATOR_ONLY }, mode: "--generator multi-turn" }
        : { flags: { ...TRACE_ONLY, format: "--format" }, mode: "--trace" };
    for (const [key, flag] of Object.entries(wrong.flags)) {
      if (given(key, c[key as keyof typeof c])) ctx.addIssue({ code: "custom", message: `${flag} applies to ${wrong.mode} only` });
    }
  });
export type ReplayConfig = z.output<typeof ReplayConfigSchema>;

/** Parses argv (without node and script) and the environment into a validated config. */
export function loadReplayConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ReplayConfig {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      trace: { type: "string" },
      format: { type: "string" },
      "skip-invalid": { type: "boolean" },
      generator: { type: "string" },
      rate: { type: "string" },
      sessions: { type: "string" },
      seed: { type: "string" },
      entrypoints: { type: "string" },
      "refresh-ms": { type: "string" },
      regions: { type: "string" },
      "time-scale": { type: "string" },
      "from-ms": { type: "string" },
      "to-ms": { type: "string" },
      "duration-s": { type: "string" },
      "max-requests": { type: "string" },
      concurrency: { type: "string" },
      model: { type: "string" },
      "max-output-tokens": { type: "string" },
      "max-input-tokens": { type: "string" },
      "ignore-eos": { type: "boolean" },
      "timeout-s": { type: "string" },
      out: { type: "string" },
      summary: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) throw new UsageRequested();
  const camel = Object.fromEntries(Object.entries(values).map(([k, v]) => [k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()), v]));
  const parsed = ReplayConfigSchema.safeParse({
    ...camel,
    entrypoints: values.entrypoints ?? "",
    entrypointsToken: env.MERIDIAN_ENTRYPOINTS_TOKEN || undefined,
    apiKey: env.MERIDIAN_API_KEY || undefined,
  });
  if (!parsed.success) {
    // A message that names its flag needs no field path in front of it.
    const describe = (i: z.core.$ZodIssue): string => (i.path.length && !i.message.startsWith("--") ? `${i.path.join(".")}: ${i.message}` : i.message);
    throw new Error(parsed.error.issues.map(describe).join("; "));
  }
  return parsed.data;
}

/** Thrown for --help so main prints the usage and exits 0. */
export class UsageRequested extends Error {}
