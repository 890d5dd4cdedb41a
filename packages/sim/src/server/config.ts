// Configuration of the meridian-engine process: CLI flags over MERIDIAN_ENGINE_* environment variables,
// validated with zod. The only module of the engine process that reads process.env or argv.
//
// Defaults follow the demo fleet (demo-network.ts), so an engine started by hand with only --region
// joins `npm start`'s fleet as one of its own: model meridian-demo, the demo's RTT matrix. An engine
// whose region the matrix does not cover emulates no delay; engineSetupWarnings says so, because
// every LB then measures it at ~1 ms and GORGO pulls every region's traffic to it.
import { parseArgs } from "node:util";
import { z } from "zod";
import { DEMO_ENGINE_PARAMS, PAPER_ENGINE_PARAMS, type EngineParams } from "../engine";
import { HeaderSafeIdSchema } from "@meridian/protocol";
import { DEMO_MODEL, DEMO_RTT_MS } from "./demo-network";
import { DIALECTS } from "./metrics";
import type { EngineServerOptions } from "./server";

const PRESETS = { demo: DEMO_ENGINE_PARAMS, paper: PAPER_ENGINE_PARAMS } as const;

/** Parses a JSON-valued option, turning a syntax error into a validation issue. */
function json<T extends z.ZodType>(schema: T) {
  return z.string().transform((text, ctx): z.output<T> => {
    try {
      return schema.parse(JSON.parse(text));
    } catch (error) {
      ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
      return z.NEVER;
    }
  });
}

const RttMatrixSchema = z.record(z.string(), z.record(z.string(), z.number().nonnegative()));
const ParamsOverrideSchema = z
  .object({
    maxRunning: z.number().int().positive(),
    kvCapacityTokens: z.number().int().positive(),
    prefillTokensPerSec: z.number().positive(),
    prefillChunkTokens: z.number().int().positive(),
    itlBaseMs: z.number().nonnegative(),
    itlPerSeqMs: z.number().nonnegative(),
    itlPerKTokMs: z.number().nonnegative(),
    prefixCacheBlocks: z.number().int().nonnegative(),
    maxOutputTokens: z.number().int().positive(),
  })
  .partial()
  .strict();

const ConfigSchema = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: z.coerce.number().int().min(0).max(65535).default(0),
  // Sent in every response's headers: visible ASCII only (東京-1 was accepted, then every answer threw).
  id: HeaderSafeIdSchema.default("engine-1"),
  region: HeaderSafeIdSchema.default("local"),
  model: z.string().min(1).default(DEMO_MODEL),
  dialect: z.enum(DIALECTS).default("sglang"),
  preset: z.enum(["demo", "paper"]).default("demo"),
  params: json(ParamsOverrideSchema).optional(),
  rttMatrix: json(RttMatrixSchema).default(DEMO_RTT_MS),
  tokenText: z.string().optional(),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export interface EngineProcessConfig {
  server: EngineServerOptions;
  logLevel: string;
  preset: "demo" | "paper";
}

export const USAGE = `usage: meridian-engine [--host H] [--port P] [--id ID] [--region R] [--model NAME]
                       [--dialect sglang|vllm] [--preset demo|paper] [--params JSON]
                       [--rtt-matrix JSON] [--token-text TEXT] [--log-level LEVEL]
Each flag may also come from MERIDIAN_ENGINE_<FLAG> (e.g. MERIDIAN_ENGINE_RTT_MATRIX).
--model defaults to ${DEMO_MODEL}, the model the demo fleet's LBs route.
--params overrides preset fields, e.g. '{"prefillTokensPerSec":8000}'.
--rtt-matrix is in ms, e.g. '{"us-ashburn":{"ap-seoul":464}}'; the default is the demo's matrix
  (us-ashburn, eu-frankfurt, ap-seoul). '{}' turns the delay emulation off.`;

const FLAGS = ["host", "port", "id", "region", "model", "dialect", "preset", "params", "rtt-matrix", "token-text", "log-level"] as const;

/** Reads the process configuration; throws an Error whose message lists every invalid setting. */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): EngineProcessConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(FLAGS.map((flag) => [flag, { type: "string" as const }])),
    strict: true,
    allowPositionals: false,
  });
  const raw: Record<string, string | undefined> = {};
  for (const flag of FLAGS) {
    const key = flag.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase());
    const fromFlag = values[flag];
    raw[key] = typeof fromFlag === "string" ? fromFlag : env[`MERIDIAN_ENGINE_${flag.replace(/-/g, "_").toUpperCase()}`];
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(
      parsed.error.issues.map((issue) => `--${String(issue.path[0] ?? "").replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${issue.message}`).join("\n"),
    );
  }
  const config = parsed.data;
  const params: EngineParams = { ...PRESETS[config.preset], ...config.params };
  return {
    preset: config.preset,
    logLevel: config.logLevel,
    server: {
      host: config.host,
      port: config.port,
      id: config.id,
      region: config.region,
      model: config.model,
      dialect: config.dialect,
      params,
      rttMatrix: config.rttMatrix,
      ...(config.tokenText !== undefined ? { tokenText: config.tokenText } : {}),
    },
  };
}

/**
 * What an operator should fix before this engine joins a fleet: a region the RTT matrix gives no
 * delay to any other region, so every LB measures it as local (~1 ms).
 */
export function engineSetupWarnings(server: Pick<EngineServerOptions, "region" | "rttMatrix">): string[] {
  const matrix = server.rttMatrix ?? {};
  const own = server.region;
  const others = new Set([...Object.keys(matrix), ...Object.values(matrix).flatMap((row) => Object.keys(row))]);
  others.delete(own);
  const delayed = [...others].filter((other) => (matrix[own]?.[other] ?? matrix[other]?.[own] ?? 0) > 0);
  if (delayed.length > 0) return [];
  return [
    `no RTT emulation for region "${own}": every LB will measure this engine at ~1 ms, so GORGO sends it traffic from every region. ` +
      `Pass --rtt-matrix with a row for "${own}" (the demo's regions are ${Object.keys(DEMO_RTT_MS).join(", ")}).`,
  ];
}
