// Process settings and the LB config, from a JSON file, inline JSON or code, validated with zod.
// A config file is either a bare LbConfig, or {"proxy": {...process settings}, "lb": LbConfig}.
// Precedence: CLI flag > environment > file > default. A bad value stops startup with an error that
// names the offending field (ProtocolError paths such as `lbConfig.replicas[0].url`).
import { readFileSync } from "node:fs";
import { z } from "zod";
import { DEFAULT_PEER_SNAPSHOT_KEYS } from "@meridian/lb-core";
import { parseLbConfig, type LbConfig } from "@meridian/protocol";
import type { ProxyEnv } from "./env";

export const ProcessSettingsSchema = z.strictObject({
  port: z.int().min(0).max(65_535).default(8080),
  host: z.string().min(1).default("127.0.0.1"),
  /** Last config accepted over PUT /admin/config; null = do not persist. */
  stateFile: z.string().min(1).nullable().default(null),
  /** Telemetry events held for resuming subscribers. */
  telemetryBufferSize: z.int().positive().default(16_384),
  telemetryHeartbeatMs: z.int().positive().default(5_000),
  /** How often this LB polls each peer's GET /admin/peer. */
  peerPollIntervalMs: z.int().positive().default(1_000),
  /** Block keys asked of each peer in its prefix snapshot (most recent first; via-peer mode only). */
  peerSnapshotMaxKeys: z.int().nonnegative().default(DEFAULT_PEER_SNAPSHOT_KEYS),
  /** How long startProxy waits for the first probe and scrape of every replica before serving. */
  warmupTimeoutMs: z.int().nonnegative().default(2_000),
});

export type ProcessSettings = z.output<typeof ProcessSettingsSchema>;
export type ProcessSettingsInput = z.input<typeof ProcessSettingsSchema>;

const ConfigFileSchema = z.strictObject({
  proxy: z.unknown().optional(),
  lb: z.unknown(),
});

export interface LoadedSettings {
  lbConfig: LbConfig;
  process: ProcessSettings;
  token: string | null;
}

class ConfigError extends Error {
  override name = "ConfigError";
}

export function parseProcessSettings(input: unknown, root = "proxy"): ProcessSettings {
  const result = ProcessSettingsSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => `${[root, ...issue.path.map(String)].join(".")}: ${issue.message}`);
  throw new ConfigError(issues.join("; "));
}

/** Splits a parsed config document into its process settings and LbConfig (both validated). */
export function parseConfigDocument(document: unknown): { lbConfig: LbConfig; process: ProcessSettingsInput } {
  const wrapped = ConfigFileSchema.safeParse(document);
  if (wrapped.success && typeof document === "object" && document !== null && !("schema" in document)) {
    return { lbConfig: parseLbConfig(wrapped.data.lb), process: (wrapped.data.proxy ?? {}) as ProcessSettingsInput };
  }
  return { lbConfig: parseLbConfig(document), process: {} };
}

export interface SettingsSources {
  env: ProxyEnv;
  configPath?: string | undefined;
  portFlag?: number | undefined;
}

export function loadSettings({ env, configPath, portFlag }: SettingsSources): LoadedSettings {
  const path = configPath ?? env.MERIDIAN_LB_CONFIG;
  let text: string;
  let origin: string;
  if (path) {
    text = readFileSync(path, "utf8");
    origin = path;
  } else if (env.MERIDIAN_LB_CONFIG_JSON) {
    text = env.MERIDIAN_LB_CONFIG_JSON;
    origin = "MERIDIAN_LB_CONFIG_JSON";
  } else {
    throw new ConfigError("no config: pass --config FILE or set MERIDIAN_LB_CONFIG / MERIDIAN_LB_CONFIG_JSON");
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(`${origin}: not valid JSON (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  let parsed: ReturnType<typeof parseConfigDocument>;
  try {
    parsed = parseConfigDocument(document);
  } catch (cause) {
    throw new ConfigError(`${origin}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  const overrides: Partial<ProcessSettingsInput> = {};
  if (env.MERIDIAN_LB_PORT !== undefined) overrides.port = env.MERIDIAN_LB_PORT;
  if (env.MERIDIAN_LB_HOST !== undefined) overrides.host = env.MERIDIAN_LB_HOST;
  if (env.MERIDIAN_LB_STATE_FILE !== undefined) overrides.stateFile = env.MERIDIAN_LB_STATE_FILE;
  if (portFlag !== undefined) overrides.port = portFlag;
  const processSettings = parseProcessSettings({ ...(parsed.process as object), ...overrides });
  return { lbConfig: parsed.lbConfig, process: processSettings, token: env.MERIDIAN_LB_TOKEN ?? null };
}
