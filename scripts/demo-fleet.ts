// demo-fleet: the demo fleet behind `npm start` — six simulated engines (two per region, SGLang and
// vLLM dialects, network delays from the paper's RTT matrix), one meridian-proxy LB per region, and
// the built-in multi-turn workload whose clients resolve their region's entrypoint from the console.
// The console seeds the same topology into its DB (apps/console/src/lib/demo-topology.ts).
//
// Run:   npx tsx scripts/demo-fleet.ts [--base-port 4100] [--console URL] [--rate 3] [--no-load]
// Env:   MERIDIAN_DEMO_BASE_PORT (default 4100), MERIDIAN_CONSOLE_URL (default http://127.0.0.1:3000),
//        MERIDIAN_ENTRYPOINTS_TOKEN (the console's machine token, for the clients' entrypoint map),
//        MERIDIAN_DEMO_LOAD=0 (no client traffic), MERIDIAN_DEMO_RATE (requests/s over all regions),
//        MERIDIAN_DB_PATH (the state directory is demo-<base port>/ beside it; default data/),
//        LOG_LEVEL (the LBs' log level, default warn).
// Prints: one line per started engine and LB (with its PID), "demo fleet ready", a traffic line
//         every 30 s, and every exit and restart of an engine or LB.
// Exits:  on SIGINT/SIGTERM, after stopping everything it started (by PID); a supervisor that starts
//         it (npm start) sends SIGTERM even when killed outright (supervisor.ts, on Linux); with
//         status 2 when the fleet cannot start (another fleet uses its state directory, a port in
//         use, a bad environment, an LB or engine that never stays up).
// Ports:  engines BASE+1..BASE+6, LBs BASE+11..BASE+13.
//
// Decisions
// - Every engine and LB is its own process (bins meridian-engine and meridian-proxy), kept running
//   by the supervisor (scripts/lib/supervisor.ts): one that dies is restarted with backoff (0.5 s
//   doubling to 30 s) on the same port, so a killed LB comes back and the console fails it back.
//   Separate processes are also what lets an operator kill or freeze one replica to see failover.
// - One fleet per state directory: a fleet first takes `<state dir>/fleet.lock` (its PID;
//   scripts/lib/fleet-lock.ts, released when it exits). While a live fleet holds it, another exits
//   with status 2 ("a demo fleet (pid N) already uses <state dir>") and touches nothing; a lock
//   whose fleet is gone (killed outright) is replaced.
// - `<state dir>/<name>.pid` holds each process's PID (scripts/lib/pid-files.ts); a fleet that
//   starts after one that was killed stops the leftovers it finds there first, once it holds the lock.
// - LB tokens: the console issues each LB its own and, in the demo, writes it to
//   `<state dir>/<lb id>.token` (what an operator would copy from the LBs page). Each LB starts
//   once its file exists, with MERIDIAN_LB_TOKEN_FILE; when the console replaces a file (a fresh
//   database), the LB is restarted so it reads the new token. A restarted LB reads its rotated tokens
//   from its credentials file: the console is not needed to serve.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { LB_CONFIG_SCHEMA } from "@meridian/protocol";
import { createEntrypointResolver, startLoadGenerator, type LoadGenerator } from "@meridian/workload";
import { demoStateDir, demoTokenFile } from "../apps/console/src/lib/demo-files";
import { DEMO_MODEL, DEMO_REGIONS, DEMO_RTT_MS, demoTopology } from "../apps/console/src/lib/demo-topology";
import { acquireFleetLock } from "./lib/fleet-lock";
import { removePidFile, stopLeftovers, writePidFile } from "./lib/pid-files";
import { portIsFree, readPortEnv } from "./lib/ports.mjs";
import { DEFAULT_RESTART_POLICY, Supervisor, type ChildSpec } from "./lib/supervisor";

const root = resolve(fileURLToPath(import.meta.url), "..", "..");
const ENGINE_BIN = join(root, "packages", "sim", "bin", "meridian-engine.mjs");
const PROXY_BIN = join(root, "packages", "proxy", "bin", "meridian-proxy.mjs");
/** Exit status when the fleet cannot start; start.mjs does not retry it. */
const SETUP_FAILED = 2;

/** How often the LBs' token files are checked (first appearance, replacement). */
const TOKEN_CHECK_MS = 500;

const EnvSchema = z.object({
  MERIDIAN_ENTRYPOINTS_TOKEN: z.string().min(1).optional(),
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

class SetupError extends Error {}

/** --base-port, checked as MERIDIAN_DEMO_BASE_PORT is (the console accepts up to 65000). */
function basePortFlag(text: string): number {
  try {
    return readPortEnv({ "--base-port": text }, "--base-port", 0, 65000);
  } catch (error) {
    throw new SetupError((error as Error).message);
  }
}

/** --rate, checked as MERIDIAN_DEMO_RATE is: unchecked, "3/s" started the whole fleet and then
 * crashed it from inside the load generator (exit 1, which start.mjs retries). */
function rateFlag(text: string): number {
  const rate = Number(text);
  if (text.trim() === "" || !Number.isFinite(rate) || !(rate > 0)) throw new SetupError(`--rate: expected requests per second > 0, got "${text}"`);
  return rate;
}

/** Runs `check` every intervalMs until it holds (true), the fleet stops, or timeoutMs passed (false). */
async function pollUntil(check: () => Promise<boolean>, timeoutMs: number, intervalMs: number, stopped: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !stopped()) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return false;
}

/** Polls GET url until it answers 2xx; false after timeoutMs. */
function answers(url: string, timeoutMs: number, stopped: () => boolean): Promise<boolean> {
  const check = async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false; // not listening yet
    }
  };
  return pollUntil(check, timeoutMs, 200, stopped);
}

/**
 * Whether the console's entrypoint map names an LB for every region within `timeoutMs`. The LBs
 * answer before the console's next probe round has seen them, and until it has, their regions have
 * no entrypoint: clients started then would fail with "no entrypoint".
 */
async function entrypointsCover(
  url: string,
  token: string | undefined,
  regions: readonly string[],
  timeoutMs: number,
  stopped: () => boolean,
): Promise<boolean> {
  const map = createEntrypointResolver({ source: url, ...(token ? { token } : {}), refreshMs: timeoutMs });
  const covered = async () => {
    await map.refresh().catch(() => undefined);
    return regions.every((region) => map.get(region) !== undefined);
  };
  try {
    return await pollUntil(covered, timeoutMs, 500, stopped);
  } finally {
    map.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "base-port": { type: "string" },
      console: { type: "string" },
      rate: { type: "string" },
      "no-load": { type: "boolean" },
    },
    strict: true,
  });
  const parsedEnv = EnvSchema.safeParse(process.env);
  if (!parsedEnv.success) throw new SetupError(parsedEnv.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
  const env = parsedEnv.data;
  const basePort = values["base-port"] ? basePortFlag(values["base-port"]) : env.MERIDIAN_DEMO_BASE_PORT;
  const consoleUrl = (values.console ?? env.MERIDIAN_CONSOLE_URL).replace(/\/+$/, "");
  const rate = values.rate !== undefined ? rateFlag(values.rate) : env.MERIDIAN_DEMO_RATE;
  const withLoad = !values["no-load"] && env.MERIDIAN_DEMO_LOAD === "1";
  // The console writes the LBs' tokens here (apps/console/src/lib/demo-files.ts).
  const stateDir = demoStateDir(resolve(root, env.MERIDIAN_DB_PATH), basePort);
  mkdirSync(stateDir, { recursive: true });
  const topology = demoTopology(basePort);

  // Nothing in the state directory is touched before this fleet holds it.
  const locked = acquireFleetLock(stateDir);
  if (!locked.ok) throw new SetupError(`a demo fleet (pid ${locked.holder}) already uses ${stateDir}`);
  process.once("exit", () => locked.lock.release());
  if (locked.replaced !== null) log(`replaced the stale ${locked.lock.path} (pid ${locked.replaced} is no longer a demo fleet)`);
  for (const leftover of await stopLeftovers(stateDir)) log(`stopped ${leftover.name} (pid ${leftover.pid}) left running by an earlier demo fleet`);
  const ports = [...topology.engines.map((e) => e.port), ...topology.lbs.map((l) => l.port)];
  const busy: number[] = [];
  for (const port of ports) if (!(await portIsFree(topology.host, port))) busy.push(port);
  if (busy.length > 0) {
    throw new SetupError(
      `port${busy.length > 1 ? "s" : ""} ${busy.join(", ")} on ${topology.host} already in use; choose other ports with MERIDIAN_DEMO_BASE_PORT`,
    );
  }

  let generator: LoadGenerator | null = null;
  let stopping = false;
  const markers = new Map<string, string>();
  const supervisor = new Supervisor(DEFAULT_RESTART_POLICY, (event) => {
    if (stopping) return;
    switch (event.kind) {
      case "started":
        writePidFile(stateDir, event.name, event.pid, markers.get(event.name) ?? event.name);
        if (event.restarts > 0) log(`${event.name} restarted, pid ${event.pid}`);
        break;
      case "exited":
        log(`${event.name} exited (${event.signal ?? `code ${event.code}`})`);
        break;
      case "spawn-failed":
        log(`${event.name} could not be started: ${event.error}`);
        break;
      case "restart-scheduled":
        log(`restarting ${event.name} in ${(event.delayMs / 1000).toFixed(1)} s`);
        break;
      case "gave-up":
        log(`${event.name} exited ${event.failures} time(s) without staying up; stopping the fleet`);
        void stopAll(SETUP_FAILED);
        break;
    }
  });

  async function stopAll(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    log("stopping");
    await generator?.stop().catch(() => undefined);
    // The LBs first: they finish the streams they carry while the engines still answer them.
    const lbIds = topology.lbs.map((lb) => lb.id);
    for (const name of [...lbIds, ...supervisor.names().filter((name) => !lbIds.includes(name))]) {
      const status = supervisor.status(name);
      if (status?.running) log(`stopping ${name} (pid ${status.pid})`);
    }
    await supervisor.stop(3_000, lbIds);
    await supervisor.stop(3_000);
    for (const name of supervisor.names()) removePidFile(stateDir, name);
    process.exit(code);
  }
  process.once("SIGINT", () => void stopAll(0));
  process.once("SIGTERM", () => void stopAll(0));

  function supervise(spec: ChildSpec, marker: string): void {
    markers.set(spec.name, marker);
    // Exit status 2 is the bins' "bad configuration"; retrying cannot fix it.
    supervisor.add({ cwd: root, fatalExitCodes: [2], ...spec });
  }

  for (const spec of topology.engines) {
    const args = [
      ENGINE_BIN,
      ...["--host", topology.host, "--port", String(spec.port), "--id", spec.id, "--region", spec.region],
      ...["--model", DEMO_MODEL, "--dialect", spec.engine, "--preset", "demo", "--rtt-matrix", JSON.stringify(DEMO_RTT_MS)],
      ...["--log-level", "warn"],
    ];
    // stdout carries only the engine's ready line, which this fleet words itself.
    supervise({ name: spec.id, command: process.execPath, args, stdio: ["ignore", "ignore", "inherit"] }, `--port ${spec.port} --id ${spec.id}`);
    log(`engine ${spec.id} (${spec.region}, ${spec.engine}) on ${spec.url}, pid ${supervisor.status(spec.id)?.pid}`);
  }

  // Each LB reads its own token from its file, never one inherited from this process's environment.
  const { MERIDIAN_LB_TOKEN: _inheritedToken, ...inherited } = process.env;
  const tokenSeen = new Map<string, string>();
  function startLb(lb: (typeof topology.lbs)[number], token: string): void {
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
    tokenSeen.set(lb.id, token);
    supervise(
      {
        name: lb.id,
        command: process.execPath,
        args: [PROXY_BIN, "--config", configPath],
        env: { ...inherited, MERIDIAN_LB_TOKEN_FILE: demoTokenFile(stateDir, lb.id), LOG_LEVEL: env.LOG_LEVEL },
      },
      configPath,
    );
    log(`LB ${lb.id} (${lb.region}) on ${lb.url}, pid ${supervisor.status(lb.id)?.pid}`);
  }
  const readToken = (lbId: string): string | null => {
    const file = demoTokenFile(stateDir, lbId);
    return existsSync(file) ? readFileSync(file, "utf8").trim() : null;
  };
  const pendingLbs = new Set(topology.lbs.map((lb) => lb.id));
  function checkTokens(): void {
    for (const lb of topology.lbs) {
      const token = readToken(lb.id);
      if (!token) continue;
      if (pendingLbs.delete(lb.id)) {
        startLb(lb, token);
      } else if (tokenSeen.get(lb.id) !== token) {
        // The console issued this LB a new token (a fresh database): restart it to read the file.
        tokenSeen.set(lb.id, token);
        const pid = supervisor.status(lb.id)?.pid;
        log(`${lb.id} has a new token from the console; restarting it`);
        if (pid) process.kill(pid, "SIGTERM");
      }
    }
  }
  checkTokens();
  if (pendingLbs.size > 0) log(`waiting for the console to issue tokens for ${[...pendingLbs].join(", ")} (in ${stateDir})`);
  const tokenTimer = setInterval(checkTokens, TOKEN_CHECK_MS);
  tokenTimer.unref();
  const tokensIssued = async (): Promise<void> => {
    while (pendingLbs.size > 0 && !stopping) await new Promise((r) => setTimeout(r, TOKEN_CHECK_MS));
  };
  await tokensIssued();
  if (stopping) return;

  const health = [...topology.engines.map((e) => `${e.url}/health`), ...topology.lbs.map((l) => `${l.url}/health`)];
  const up = await Promise.all(health.map((url) => answers(url, 60_000, () => stopping)));
  if (stopping) return;
  const down = health.filter((_, i) => !up[i]);
  if (down.length > 0) log(`not answering after 60 s: ${down.join(", ")} (they keep being restarted)`);

  if (withLoad) {
    const entrypoints = `${consoleUrl}/api/entrypoints`;
    const covered = await entrypointsCover(entrypoints, env.MERIDIAN_ENTRYPOINTS_TOKEN, DEMO_REGIONS, 60_000, () => stopping);
    if (stopping) return;
    if (!covered) log(`the console's entrypoint map lacks a region after 60 s (${entrypoints}); starting client traffic anyway`);
    const weights = Object.fromEntries(DEMO_REGIONS.map((region) => [region, 1]));
    generator = startLoadGenerator({
      entrypoints,
      ...(env.MERIDIAN_ENTRYPOINTS_TOKEN ? { entrypointsToken: env.MERIDIAN_ENTRYPOINTS_TOKEN } : {}),
      refreshMs: 2_000,
      concurrency: 64,
      model: DEMO_MODEL,
      maxOutputTokens: 128,
      generator: { seed: 7, ratePerS: rate, sessions: 24, regions: weights },
    });
    log(`client traffic: ${rate} req/s over ${DEMO_REGIONS.join(", ")}, entrypoints from ${entrypoints}`);
    const report = setInterval(() => {
      const s = generator?.summary();
      if (!s) return;
      const ms = (v: number | null | undefined) => (v === null || v === undefined ? "-" : `${Math.round(v)} ms`);
      const errors = Object.entries(s.errorsByKind)
        .map(([kind, n]) => `${kind}:${n}`)
        .join(" ");
      log(`traffic: ${s.requests} requests (${s.errors} errors${errors ? ` ${errors}` : ""}), TTFT p50 ${ms(s.ttftMs.p50)} p95 ${ms(s.ttftMs.p95)}`);
    }, 30_000);
    report.unref();
  }
  log("demo fleet ready");
}

main().catch((error: unknown) => {
  process.stderr.write(`demo-fleet: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof SetupError ? SETUP_FAILED : 1);
});
