// The one place the proxy process reads its environment. Every variable is optional; the CLI flags and
// the config file fill in the rest (precedence: flag > env > file > default), see settings.ts.
import { z } from "zod";
import { DurationMsOrZeroSchema } from "@meridian/protocol";

/** A port as an operator writes one: decimal digits only (Number() also read "", " ", "0x1F99" and
 * "1e4" as ports), 0 for a free one. */
export const PORT_PATTERN = /^\d{1,5}$/;
const port = z
  .string()
  .regex(PORT_PATTERN, { error: "expected a port: decimal digits, 0 to 65535" })
  .transform(Number)
  .pipe(z.number().max(65_535, { error: "expected a port: 0 to 65535" }));

/** The bearer a scraper presents to read the per-client-key series of GET /metrics. Sent in an HTTP
 * header and read back by Prometheus from a file it trims, so printable ASCII without spaces; 16
 * characters at least, so it is not a word an operator picked to get past a prompt. */
export const MetricsTokenSchema = z.string().regex(/^[\x21-\x7e]{16,}$/, { error: "expected at least 16 printable ASCII characters without spaces" });

export const ProxyEnvSchema = z.object({
  /** This LB's token, as the console showed it once (mlt_…); the console's admin bearer and the
   * source of the LB's proof key and peer credential. Without it (and without a credentials file)
   * the admin API answers 401 to everyone. */
  MERIDIAN_LB_TOKEN: z
    .string()
    .regex(/^mlt_[A-Za-z0-9_-]{43}$/, { error: "expected an LB token as the console issues them (mlt_ and 43 characters)" })
    .optional(),
  /** A file whose first line is the token (instead of MERIDIAN_LB_TOKEN). */
  MERIDIAN_LB_TOKEN_FILE: z.string().min(1).optional(),
  /** The bearer that reads the per-client-key series of GET /metrics (same as proxy.metricsToken);
   * without it only the console's LB token does. */
  MERIDIAN_LB_METRICS_TOKEN: MetricsTokenSchema.optional(),
  /** Where the tokens this LB accepts are persisted (default: beside the state file). */
  MERIDIAN_LB_CREDENTIALS_FILE: z.string().min(1).optional(),
  /** Path of the JSON config file (same as --config). */
  MERIDIAN_LB_CONFIG: z.string().min(1).optional(),
  /** An LbConfig as inline JSON, used when no file is given (containers, the demo). */
  MERIDIAN_LB_CONFIG_JSON: z.string().min(1).optional(),
  MERIDIAN_LB_PORT: port.optional(),
  MERIDIAN_LB_HOST: z.string().min(1).optional(),
  /** Where the last config accepted over PUT /admin/config is persisted and reloaded on restart. */
  MERIDIAN_LB_STATE_FILE: z.string().min(1).optional(),
  /** On SIGTERM, how long requests in flight may take to finish (ms, default 30 000). */
  MERIDIAN_LB_DRAIN_TIMEOUT_MS: z.coerce.number().pipe(DurationMsOrZeroSchema).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export type ProxyEnv = z.output<typeof ProxyEnvSchema>;

/** Throws an error naming each bad variable. */
export function readProxyEnv(source: NodeJS.ProcessEnv = process.env): ProxyEnv {
  // `NAME=` means "not set" to an operator: coerced, an empty MERIDIAN_LB_PORT became port 0 (a
  // random port, over the config file's) and an empty drain timeout 0 ms.
  const set = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value.trim() !== ""));
  const result = ProxyEnvSchema.safeParse(set);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  throw new Error(`invalid environment: ${problems.join("; ")}`);
}
