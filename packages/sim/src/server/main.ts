// meridian-engine main: reads the configuration (flags over MERIDIAN_ENGINE_* env), starts one
// simulated engine server, prints its URL on one line when ready, and closes cleanly on SIGTERM/SIGINT.
import { pino } from "pino";
import { type EngineProcessConfig, engineSetupWarnings, loadConfig, USAGE } from "./config";
import { startEngineServer } from "./server";

let config: EngineProcessConfig;
try {
  config = loadConfig(process.argv.slice(2), process.env);
} catch (error) {
  process.stderr.write(`meridian-engine: ${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
  process.exit(2);
}

for (const warning of engineSetupWarnings(config.server)) process.stderr.write(`meridian-engine: warning: ${warning}\n`);

// Logs go to stderr so stdout carries only the ready line that scripts wait for.
const logger = pino({ name: "meridian-engine", level: config.logLevel }, pino.destination(2));
const server = await startEngineServer({ ...config.server, onError: (error) => logger.error({ err: error }, "request failed") });
const { id, region, dialect, model } = config.server;
logger.info({ id, region, dialect, preset: config.preset, url: server.url }, "engine ready");
process.stdout.write(`meridian-engine ${id} (${region}, ${dialect}, model ${model}) listening on ${server.url}\n`);

let stopping = false;
function stop(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "engine stopping");
  server.close().then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, "engine close failed");
      process.exit(1);
    },
  );
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
