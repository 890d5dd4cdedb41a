// Process settings and the LB config, from a JSON file, inline JSON or code, validated with zod.
// A config file is either a bare LbConfig, or {"proxy": {...process settings}, "lb": LbConfig}.
// Precedence: CLI flag > environment > file > default. A bad value stops startup with an error that
// names the offending field (ProtocolError paths such as `lbConfig.replicas[0].url`).
import { readFileSync } from "node:fs";
import { z } from "zod";
import { DEFAULT_PEER_SNAPSHOT_KEYS } from "@meridian/lb-core";
import { DurationMsOrZeroSchema, DurationMsSchema, parseLbConfig, type LbConfig } from "@meridian/protocol";
import { isLbToken } from "@meridian/protocol/credentials";
import { MetricsTokenSchema, type ProxyEnv } from "./env";

// Every *Ms setting runs on a timer: bounded to what a Node timer holds (protocol's durationMs).
export const ProcessSettingsSchema = z.strictObject({
  port: z.int().min(0).max(65_535).default(8080),
  host: z.string().min(1).default("127.0.0.1"),
  /** Last config accepted over PUT /admin/config; null = do not persist. */
  stateFile: z.string().min(1).nullable().default(null),
  /** Where the LB tokens this LB accepts are persisted (key material only, mode 0600); null = beside
   * the state file (`<state file>.credentials.json`), or nowhere without one. */
  credentialsFile: z.string().min(1).nullable().default(null),
  /** The bearer that reads the per-client-key series of GET /metrics, besides the console's LB token;
   * null = the LB token only (every scrape still gets the aggregate series without a bearer). */
  metricsToken: MetricsTokenSchema.nullable().default(null),
  /** Telemetry events held for resuming subscribers. */
  telemetryBufferSize: z.int().positive().default(16_384),
  telemetryHeartbeatMs: DurationMsSchema.default(5_000),
  /** How often this LB polls each peer's GET /admin/peer. */
  peerPollIntervalMs: DurationMsSchema.default(1_000),
  /** Block keys asked of each peer in its prefix snapshot (most recent first; via-peer mode only). */
  peerSnapshotMaxKeys: z.int().nonnegative().default(DEFAULT_PEER_SNAPSHOT_KEYS),
  /** How long startProxy waits for the first probe and scrape of every replica before serving. */
  warmupTimeoutMs: DurationMsOrZeroSchema.default(2_000),
  /** On SIGTERM, how long requests in flight may take to finish before they are cut. */
  drainTimeoutMs: DurationMsOrZeroSchema.default(30_000),
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

/** The credentials file in use: the setting, else beside the state file, else none (memory only). */
export function credentialsFileFor(settings: Pick<ProcessSettings, "credentialsFile" | "stateFile">): string | null {
  if (settings.credentialsFile) return settings.credentialsFile;
  if (!settings.stateFile) return null;
  return `${settings.stateFile.replace(/\.json$/, "")}.credentials.json`;
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
  if (env.MERIDIAN_LB_CREDENTIALS_FILE !== undefined) overrides.credentialsFile = env.MERIDIAN_LB_CREDENTIALS_FILE;
  if (env.MERIDIAN_LB_METRICS_TOKEN !== undefined) overrides.metricsToken = env.MERIDIAN_LB_METRICS_TOKEN;
  if (env.MERIDIAN_LB_DRAIN_TIMEOUT_MS !== undefined) overrides.drainTimeoutMs = env.MERIDIAN_LB_DRAIN_TIMEOUT_MS;
  if (portFlag !== undefined) overrides.port = portFlag;
  const processSettings = parseProcessSettings({ ...(parsed.process as object), ...overrides });
  return { lbConfig: parsed.lbConfig, process: processSettings, token: readToken(env) };
}

/** MERIDIAN_LB_TOKEN, else the first line of MERIDIAN_LB_TOKEN_FILE (how the demo fleet and secret
 * mounts hand the LB its token), else none. */
function readToken(env: ProxyEnv): string | null {
  if (env.MERIDIAN_LB_TOKEN) return env.MERIDIAN_LB_TOKEN;
  if (!env.MERIDIAN_LB_TOKEN_FILE) return null;
  let text: string;
  try {
    text = readFileSync(env.MERIDIAN_LB_TOKEN_FILE, "utf8");
  } catch (cause) {
    throw new ConfigError(`MERIDIAN_LB_TOKEN_FILE: cannot read ${env.MERIDIAN_LB_TOKEN_FILE} (${(cause as Error).message})`);
  }
  const token = text.split("\n")[0]?.trim() ?? "";
  if (!isLbToken(token)) throw new ConfigError(`MERIDIAN_LB_TOKEN_FILE: ${env.MERIDIAN_LB_TOKEN_FILE} does not hold an LB token (mlt_…)`);
  return token;
}
