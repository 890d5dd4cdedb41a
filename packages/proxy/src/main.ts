// meridian-proxy CLI: `meridian-proxy --config FILE [--port N]`. Reads env (env.ts) and the config,
// starts one regional LB, and drains it on SIGINT/SIGTERM (a second signal stops it at once). A bad
// config exits with status 2 and a message naming the offending field.
import { parseArgs } from "node:util";
import { pino } from "pino";
import { PORT_PATTERN, readProxyEnv } from "./env";
import { startProxy } from "./server";
import { loadSettings } from "./settings";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: "string", short: "c" },
      port: { type: "string", short: "p" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write("usage: meridian-proxy --config FILE [--port N]\n");
    return;
  }
  let portFlag: number | undefined;
  if (values.port !== undefined) {
    // Digits only: Number("") is 0, so `--port "$UNSET"` listened on a random port over the config's.
    portFlag = PORT_PATTERN.test(values.port) ? Number(values.port) : Number.NaN;
    if (!(portFlag <= 65_535)) throw new Error(`--port: expected a port (decimal digits, 0 to 65535), got ${JSON.stringify(values.port)}`);
  }
  const env = readProxyEnv();
  const logger = pino({ level: env.LOG_LEVEL, name: "meridian-proxy" });
  const loaded = loadSettings({ env, configPath: values.config, portFlag });
  const proxy = await startProxy({ config: loaded.lbConfig, settings: loaded.process, token: loaded.token, logger });
  // The first SIGTERM or SIGINT drains: no new requests, those in flight finish (up to
  // drainTimeoutMs). A second one stops at once. SIGKILL is abrupt, as it must be.
  let signals = 0;
  const stop = (signal: string): void => {
    signals++;
    const drainMs = loaded.process.drainTimeoutMs;
    logger.info({ signal, drainTimeoutMs: signals === 1 ? drainMs : 0 }, signals === 1 ? "draining, then shutting down" : "shutting down now");
    (signals === 1 ? proxy.drain(drainMs) : proxy.close()).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

main().catch((error: unknown) => {
  process.stderr.write(`meridian-proxy: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
