// demo-fleet: the demo fleet behind `npm start` — six simulated engines (two per region, SGLang and
// vLLM dialects, network delays from the paper's RTT matrix), one meridian-proxy LB per region, and
// the built-in multi-turn workload whose clients resolve their region's entrypoint from the console.
// The console seeds the same topology into its DB (apps/console/src/server/demo/topology.ts).
//
// Run:   MERIDIAN_LB_TOKEN=... npx tsx scripts/demo-fleet.ts [--base-port 4100] [--console URL]
//                                                          [--rate 3] [--no-load] [--state-dir DIR]
// Env:   MERIDIAN_LB_TOKEN (required: the LBs' admin token, also the console's machine token),
//        MERIDIAN_DEMO_BASE_PORT (default 4100), MERIDIAN_CONSOLE_URL (default http://127.0.0.1:3000),
//        MERIDIAN_DEMO_LOAD=0 (no client traffic), MERIDIAN_DEMO_RATE (requests/s over all regions),
//        MERIDIAN_DB_PATH (the LBs' state files go in demo-<base port>/ beside it; default data/),
//        LOG_LEVEL (the LBs' log level, default warn).
// Prints: one line per started engine and LB (with its PID), "demo fleet ready", a traffic line
//         every 30 s; stops everything it started on SIGINT/SIGTERM (LBs by PID).
// Ports:  engines BASE+1..BASE+6, LBs BASE+11..BASE+13.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { LB_CONFIG_SCHEMA } from "@meridian/protocol";
import { DEMO_ENGINE_PARAMS, startEngineServer, type EngineServer } from "@meridian/sim";
import { startLoadGenerator, type LoadGenerator } from "@meridian/workload";
import { DEMO_MODEL, DEMO_REGIONS, DEMO_RTT_MS, demoTopology } from "../apps/console/src/lib/demo-topology";

const root = resolve(fileURLToPath(import.meta.url), "..", "..");

const EnvSchema = z.object({
  MERIDIAN_LB_TOKEN: z.string().min(8, { error: "MERIDIAN_LB_TOKEN must be set (at least 8 characters)" }),
  MERIDIAN_DEMO_BASE_PORT: z.coerce.number().int().min(1).max(65000).default(4100),
  MERIDIAN_CONSOLE_URL: z.url().default("http://127.0.0.1:3000"),
  MERIDIAN_DEMO_LOAD: z.enum(["0", "1"]).default("1"),
  MERIDIAN_DEMO_RATE: z.coerce.number().positive().default(3),
  /** The console's database; the LBs' state files go beside it, so a fresh database means fresh LBs. */
  MERIDIAN_DB_PATH: z.string().min(1).default("data/meridian.db"),
  LOG_LEVEL: z.string().default("warn"),
});

function log(message: string): void {
  process.stdout.write(`[demo-fleet] ${message}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "base-port": { type: "string" },
      console: { type: "string" },
      rate: { type: "string" },
      "no-load": { type: "boolean" },
      "state-dir": { type: "string" },
    },
    strict: true,
  });
  const env = EnvSchema.parse(process.env);
  const basePort = values["base-port"] ? Number(values["base-port"]) : env.MERIDIAN_DEMO_BASE_PORT;
  const consoleUrl = (values.console ?? env.MERIDIAN_CONSOLE_URL).replace(/\/+$/, "");
  const rate = values.rate ? Number(values.rate) : env.MERIDIAN_DEMO_RATE;
  const withLoad = !values["no-load"] && env.MERIDIAN_DEMO_LOAD === "1";
  const stateDir = resolve(values["state-dir"] ?? join(dirname(resolve(root, env.MERIDIAN_DB_PATH)), `demo-${basePort}`));
  mkdirSync(stateDir, { recursive: true });
  const topology = demoTopology(basePort);

  const engines: EngineServer[] = [];
  const proxies = new Map<string, ChildProcess>();
  let generator: LoadGenerator | null = null;
  let stopping = false;

  async function stopAll(code: number): Promise<never> {
    if (stopping) process.exit(code);
    stopping = true;
    log("stopping");
    await generator?.stop().catch(() => undefined);
    for (const [id, child] of proxies) {
      if (child.exitCode === null && child.pid !== undefined) {
        log(`stopping ${id} (pid ${child.pid})`);
        child.kill("SIGTERM");
      }
    }
    await Promise.all(
      [...proxies.values()].map(
        (child) =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            const timer = setTimeout(() => {
              child.kill("SIGKILL");
              done();
            }, 3_000);
            child.once("exit", () => {
              clearTimeout(timer);
              done();
            });
          }),
      ),
    );
    await Promise.all(engines.map((engine) => engine.close().catch(() => undefined)));
    process.exit(code);
  }
  process.once("SIGINT", () => void stopAll(0));
  process.once("SIGTERM", () => void stopAll(0));

  for (const spec of topology.engines) {
    const engine = await startEngineServer({
      host: topology.host,
      port: spec.port,
      id: spec.id,
      region: spec.region,
      model: DEMO_MODEL,
      dialect: spec.engine,
      params: DEMO_ENGINE_PARAMS,
      rttMatrix: DEMO_RTT_MS,
    });
    engines.push(engine);
    log(`engine ${spec.id} (${spec.region}, ${spec.engine}) on ${engine.url}`);
  }

  const proxyBin = join(root, "packages", "proxy", "bin", "meridian-proxy.mjs");
  for (const lb of topology.lbs) {
    // The LB starts with its local replicas at version 0; the console pushes the real config.
    const initial = {
      proxy: { port: lb.port, host: topology.host, stateFile: join(stateDir, `${lb.id}.state.json`) },
      lb: {
        schema: LB_CONFIG_SCHEMA,
        version: 0,
        lbId: lb.id,
        region: lb.region,
        replicas: topology.engines
          .filter((e) => e.region === lb.region)
          .map((e) => ({ id: e.id, url: e.url, region: e.region, model: DEMO_MODEL, engine: e.engine })),
      },
    };
    const configPath = join(stateDir, `${lb.id}.config.json`);
    writeFileSync(configPath, `${JSON.stringify(initial, null, 2)}\n`);
    const child = spawn(process.execPath, [proxyBin, "--config", configPath], {
      cwd: root,
      env: { ...process.env, MERIDIAN_LB_TOKEN: env.MERIDIAN_LB_TOKEN, LOG_LEVEL: env.LOG_LEVEL },
      stdio: ["ignore", "inherit", "inherit"],
    });
    proxies.set(lb.id, child);
    child.once("exit", (code, signal) => {
      if (!stopping) log(`${lb.id} exited (${signal ?? `code ${code}`}); the console will fail it over`);
    });
    log(`LB ${lb.id} (${lb.region}) on ${lb.url}, pid ${child.pid}`);
  }

  if (withLoad) {
    const weights = Object.fromEntries(DEMO_REGIONS.map((region) => [region, 1]));
    generator = startLoadGenerator({
      entrypoints: `${consoleUrl}/api/entrypoints`,
      entrypointsToken: env.MERIDIAN_LB_TOKEN,
      refreshMs: 2_000,
      concurrency: 64,
      model: DEMO_MODEL,
      maxOutputTokens: 128,
      generator: { seed: 7, ratePerS: rate, sessions: 24, regions: weights },
    });
    log(`client traffic: ${rate} req/s over ${DEMO_REGIONS.join(", ")}, entrypoints from ${consoleUrl}/api/entrypoints`);
    const report = setInterval(() => {
      const s = generator?.summary();
      if (!s) return;
      const ms = (v: number | null | undefined) => (v === null || v === undefined ? "-" : `${Math.round(v)} ms`);
      const errors = Object.entries(s.errorsByKind).map(([kind, n]) => `${kind}:${n}`).join(" ");
      log(`traffic: ${s.requests} requests (${s.errors} errors${errors ? ` ${errors}` : ""}), TTFT p50 ${ms(s.ttftMs.p50)} p95 ${ms(s.ttftMs.p95)}`);
    }, 30_000);
    report.unref();
  }
  log("demo fleet ready");
}

main().catch((error: unknown) => {
  process.stderr.write(`demo-fleet: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
