// Control-plane faults, measured: `npm run build` once, then
//   npx tsx scripts/bench/control-plane-faults.ts
// Prints ONE JSON object (the figures in apps/console/README.md, "Failure behaviour").
//
// It starts the production console (`next start`, the demo topology) and the demo fleet without its
// own load, on loopback ports it checks are free (MERIDIAN_BENCH_CONSOLE_PORT, default 3990;
// MERIDIAN_BENCH_BASE_PORT, default 5900: engines BASE+1..6, LBs BASE+11..13), in a temporary
// database, and sends its own client traffic: 6 closed-loop workers, each request to the LB its
// region's entrypoint names (the map is re-read every second, as meridian-replay does). Then, in turn:
//   console down      SIGKILL the console for 8 s, restart it, time until it manages the fleet again
//   db locked         hold an exclusive SQLite write lock for 8 s; one operator mutation meanwhile
//   token rotation    rotate every LB's token at once (grace 2 s), time until all are retired
//   LB frozen         SIGSTOP one LB: time to automatic failover, a config change pushed meanwhile,
//                     SIGCONT, time until the change is acknowledged, then failback
//   rotation, LB away rotate the token of a frozen LB, resume it after 2.5 s, time to completion
// Each phase reports the client requests and failures seen during it. About 2 minutes. It stops only
// what it started, by PID (the fleet stops its own engines and LBs), and removes its directory.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { openDb } from "@meridian/db";
import { demoStateDir, demoTokenFile } from "../../apps/console/src/lib/demo-files";
import { DEMO_MODEL } from "../../apps/console/src/lib/demo-topology";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CONSOLE_PORT = Number(process.env.MERIDIAN_BENCH_CONSOLE_PORT ?? 3990);
const BASE_PORT = Number(process.env.MERIDIAN_BENCH_BASE_PORT ?? 5900);
const CONSOLE = `http://127.0.0.1:${CONSOLE_PORT}`;
const PASSWORD = "bench-operator-pass";
const ENTRYPOINTS_TOKEN = "bench-entrypoints-token-0123";
const dir = mkdtempSync(join(tmpdir(), "meridian-faults-"));
const dbPath = join(dir, "meridian.db");
const env = {
  ...process.env,
  NODE_ENV: "production",
  NEXT_TELEMETRY_DISABLED: "1",
  MERIDIAN_PORT: String(CONSOLE_PORT),
  MERIDIAN_CONSOLE_URL: CONSOLE,
  MERIDIAN_DB_PATH: dbPath,
  MERIDIAN_DEMO: "1",
  MERIDIAN_DEMO_BASE_PORT: String(BASE_PORT),
  MERIDIAN_ADMIN_PASSWORD: PASSWORD,
  MERIDIAN_ENTRYPOINTS_TOKEN: ENTRYPOINTS_TOKEN,
  MERIDIAN_HEALTH_INTERVAL_MS: "1000",
  MERIDIAN_FAILOVER_AFTER: "5",
  MERIDIAN_AUTO_FAILBACK_AFTER_S: "0",
  MERIDIAN_LB_TOKEN_GRACE_S: "2",
  LOG_LEVEL: "error",
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const since = (t: number) => Math.round(performance.now() - t);

function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once("error", () => done(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => done(true)));
  });
}

async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

// --- processes ---------------------------------------------------------------------------------
const children: ChildProcess[] = [];
function startConsole(): ChildProcess {
  const next = join(ROOT, "node_modules", "next", "dist", "bin", "next");
  const child = spawn(process.execPath, [next, "start", "-H", "127.0.0.1", "-p", String(CONSOLE_PORT)], {
    cwd: join(ROOT, "apps", "console"),
    env,
    stdio: "ignore",
  });
  children.push(child);
  return child;
}
const fleet = spawn(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "demo-fleet.ts"), "--no-load"], { cwd: ROOT, env, stdio: "ignore" });
let consoleProcess: ChildProcess | null = null;
const lbTelemetrySeq = async (lbId: string): Promise<number> => {
  const token = readFileSync(demoTokenFile(demoStateDir(dbPath, BASE_PORT), lbId), "utf8").trim();
  const url = `http://127.0.0.1:${BASE_PORT + 11 + ["lb-us-ashburn", "lb-eu-frankfurt", "lb-ap-seoul"].indexOf(lbId)}`;
  const res = await request(`${url}/admin/state`, { headers: { authorization: `Bearer ${token}` } });
  return ((await res.body.json()) as { telemetry: { lastSeq: number } }).telemetry.lastSeq;
};
const fleetPid = (name: string) => Number(readFileSync(join(demoStateDir(dbPath, BASE_PORT), `${name}.pid`), "utf8").split("\n")[0]);

// --- the console's API --------------------------------------------------------------------------
let cookie = "";
async function login(): Promise<void> {
  const res = await request(`${CONSOLE}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: PASSWORD }),
  });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`login ${res.statusCode}`);
  cookie = String(res.headers["set-cookie"]).split(";")[0] as string;
}
async function query<T>(path: string): Promise<T> {
  const res = await request(`${CONSOLE}/api/trpc/${path}`, { headers: { cookie } });
  const body = (await res.body.json()) as { result?: { data?: { json?: T } } };
  if (res.statusCode !== 200) throw new Error(`${path} ${res.statusCode}`);
  return body.result?.data?.json as T;
}
async function mutate(path: string, input: unknown): Promise<number> {
  const res = await request(`${CONSOLE}/api/trpc/${path}`, {
    method: "POST",
    headers: { cookie, origin: CONSOLE, "content-type": "application/json" },
    body: JSON.stringify({ json: input }),
  });
  await res.body.dump();
  return res.statusCode;
}
interface Lb {
  id: string;
  state: string;
  healthy: boolean;
  policy: string;
  configVersion: number;
  ackedVersion: number;
  entrypointFor: string[];
  credential: { keyId: string | null; pendingKeyId: string | null; retiringKeyId: string | null; proven: boolean };
}
const lbs = () => query<Lb[]>("lbs.list");
const managed = async () => (await lbs()).every((lb) => lb.healthy && lb.credential.proven && lb.ackedVersion === lb.configVersion);

// --- client traffic -------------------------------------------------------------------------------
let entrypoints: Record<string, string> = {};
let stopTraffic = false;
const counts = { ok: 0, failed: 0, byCause: {} as Record<string, number> };
async function refreshEntrypoints(): Promise<void> {
  while (!stopTraffic) {
    try {
      const res = await request(`${CONSOLE}/api/entrypoints`, { headers: { authorization: `Bearer ${ENTRYPOINTS_TOKEN}` }, headersTimeout: 1_000 });
      if (res.statusCode === 200) entrypoints = (await res.body.json()) as Record<string, string>;
      else await res.body.dump();
    } catch {
      // console down: keep the last map, as a replay client does
    }
    await sleep(1_000);
  }
}
async function worker(index: number): Promise<void> {
  for (let i = 0; !stopTraffic; i++) {
    const regions = Object.keys(entrypoints).sort();
    const url = entrypoints[regions[(index + i) % regions.length] as string];
    if (!url) {
      await sleep(100);
      continue;
    }
    try {
      const res = await request(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: DEMO_MODEL, messages: [{ role: "user", content: `worker ${index} request ${i}` }], max_tokens: 8 }),
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      await res.body.dump();
      if (res.statusCode === 200) counts.ok += 1;
      else fail(`status ${res.statusCode}`);
    } catch (error) {
      fail((error as { code?: string }).code ?? "error");
    }
  }
}
function fail(cause: string): void {
  counts.failed += 1;
  counts.byCause[cause] = (counts.byCause[cause] ?? 0) + 1;
}
async function phase<T extends object>(
  name: string,
  run: () => Promise<T>,
): Promise<T & { requests: number; failed: number; failures: Record<string, number>; ms: number }> {
  const start = { ok: counts.ok, failed: counts.failed, byCause: { ...counts.byCause } };
  const t = performance.now();
  process.stderr.write(`[faults] ${name}\n`);
  const result = await run();
  const failures = Object.fromEntries(
    Object.entries(counts.byCause)
      .map(([cause, n]) => [cause, n - (start.byCause[cause] ?? 0)])
      .filter(([, n]) => (n as number) > 0),
  );
  return { ...result, requests: counts.ok + counts.failed - start.ok - start.failed, failed: counts.failed - start.failed, failures, ms: since(t) };
}

// --- the run ---------------------------------------------------------------------------------------
async function main(): Promise<Record<string, unknown>> {
  for (const port of [CONSOLE_PORT, ...Array.from({ length: 13 }, (_, i) => BASE_PORT + 1 + i)]) {
    if (!(await portFree(port))) throw new Error(`port ${port} is in use; set MERIDIAN_BENCH_CONSOLE_PORT / MERIDIAN_BENCH_BASE_PORT`);
  }
  consoleProcess = startConsole();
  await until("the console", async () => (await request(`${CONSOLE}/api/health`)).statusCode === 200, 90_000);
  await login();
  await until("the fleet managed", managed, 90_000);
  const traffic = [refreshEntrypoints(), ...Array.from({ length: 6 }, (_, i) => worker(i))];
  await until("traffic", async () => counts.ok > 20);

  const baseline = await phase("baseline", async () => {
    await sleep(5_000);
    return {};
  });

  const consoleDown = await phase("console down", async () => {
    consoleProcess?.kill("SIGKILL");
    await sleep(8_000);
    const restarted = performance.now();
    consoleProcess = startConsole();
    await until("the console back", async () => (await request(`${CONSOLE}/api/health`)).statusCode === 200, 90_000);
    const answeringMs = since(restarted);
    await login();
    await until("the fleet managed again", managed, 60_000);
    const managedMs = since(restarted);
    // Telemetry: the restarted console reads each LB's ring again from the start (events of the
    // outage included, while they fit in the ring); a `dropped` line would count what no longer did.
    const lbSeqs = await Promise.all((await lbs()).map(async (lb) => [lb.id, await lbTelemetrySeq(lb.id)] as const));
    const telemetry = await until("telemetry caught up", async () => {
      const status = (await query<{ telemetry: { lbId: string; lastSeq: number; dropped: number }[] }>("overview.summary")).telemetry;
      const caughtUp = lbSeqs.every(([id, seq]) => (status.find((s) => s.lbId === id)?.lastSeq ?? 0) >= seq);
      return caughtUp ? { caughtUpMs: since(restarted), dropped: status.reduce((sum, s) => sum + s.dropped, 0) } : null;
    });
    return { downMs: 8_000, consoleAnsweringAfterRestartMs: answeringMs, fleetManagedAfterRestartMs: managedMs, telemetry };
  });

  const dbLocked = await phase("db locked", async () => {
    const db = openDb(dbPath).$client;
    db.pragma("busy_timeout = 0");
    db.exec("BEGIN EXCLUSIVE");
    const lb = (await lbs())[0] as Lb;
    const t = performance.now();
    const status = await mutate("lbs.setPolicy", { id: lb.id, policy: "least-load", crossRegion: "direct" });
    const mutationMs = since(t);
    const read = performance.now();
    const stillReadable = (await lbs()).length === 3;
    const readMs = since(read);
    await sleep(Math.max(0, 8_000 - since(t)));
    db.exec("ROLLBACK");
    db.close();
    const after = performance.now();
    const retried = await mutate("lbs.setPolicy", { id: lb.id, policy: "least-load", crossRegion: "direct" });
    await until("the change acknowledged", async () => {
      const now = (await lbs()).find((x) => x.id === lb.id);
      return now?.policy === "least-load" && now.ackedVersion === now.configVersion;
    });
    await mutate("lbs.setPolicy", { id: lb.id, policy: lb.policy, crossRegion: "direct" });
    return {
      lockMs: 8_000,
      mutationDuringLock: { status, ms: mutationMs },
      readDuringLock: { ok: stillReadable, ms: readMs },
      mutationAfterUnlock: { status: retried, ackedMs: since(after) },
    };
  });

  const tokenRotation = await phase("token rotation", async () => {
    const before = await lbs();
    const statuses = await Promise.all(before.map((lb) => mutate("lbs.rotateToken", { id: lb.id })));
    const t = performance.now();
    await until("every rotation finished", async () => {
      const now = await lbs();
      return now.every(
        (lb) => lb.credential.keyId !== before.find((b) => b.id === lb.id)?.credential.keyId && lb.credential.retiringKeyId === null && lb.credential.proven,
      );
    });
    return { lbs: before.length, statuses, graceMs: 2_000, allRetiredMs: since(t) };
  });

  const lbFrozen = await phase("LB frozen", async () => {
    const victim = (await lbs()).find((lb) => lb.id === "lb-us-ashburn") as Lb;
    const pid = fleetPid(victim.id);
    process.kill(pid, "SIGSTOP");
    const t = performance.now();
    const pushStatus = await mutate("lbs.setPolicy", { id: victim.id, policy: "least-load", crossRegion: "direct" });
    await until("the automatic failover", async () => (await lbs()).find((lb) => lb.id === victim.id)?.state === "failed-over", 60_000);
    const failedOverMs = since(t);
    const entrypointMovedMs = await until("clients moved", async () =>
      Object.values(entrypoints).includes(`http://127.0.0.1:${BASE_PORT + 11}`) ? null : since(t),
    );
    process.kill(pid, "SIGCONT");
    const resumed = performance.now();
    await until("the LB answering", async () => (await lbs()).find((lb) => lb.id === victim.id)?.healthy);
    const healthyAfterResumeMs = since(resumed);
    const failback = await mutate("lbs.failback", { id: victim.id });
    await until("the config acknowledged", async () => {
      const lb = (await lbs()).find((x) => x.id === victim.id);
      return lb?.state === "healthy" && lb.ackedVersion === lb.configVersion && lb.policy === "least-load";
    });
    const ackedAfterResumeMs = since(resumed);
    await mutate("lbs.setPolicy", { id: victim.id, policy: victim.policy, crossRegion: "direct" });
    return {
      frozenMs: since(t),
      failoverAfterProbes: 5,
      probeIntervalMs: 1_000,
      failedOverMs,
      clientsMovedMs: entrypointMovedMs,
      pushStatus,
      failback,
      healthyAfterResumeMs,
      configAckedAfterResumeMs: ackedAfterResumeMs,
    };
  });

  const rotationLbAway = await phase("rotation, LB away", async () => {
    const victim = (await lbs()).find((lb) => lb.id === "lb-eu-frankfurt") as Lb;
    const pid = fleetPid(victim.id);
    process.kill(pid, "SIGSTOP");
    const status = await mutate("lbs.rotateToken", { id: victim.id });
    await sleep(2_500);
    const during = (await lbs()).find((lb) => lb.id === victim.id)?.credential;
    process.kill(pid, "SIGCONT");
    const resumed = performance.now();
    await until("the rotation finished", async () => {
      const c = (await lbs()).find((lb) => lb.id === victim.id)?.credential;
      return c && c.pendingKeyId === null && c.retiringKeyId === null && c.keyId !== victim.credential.keyId && c.proven;
    });
    return { status, pendingWhileAway: during?.pendingKeyId !== null, completedAfterResumeMs: since(resumed) };
  });

  stopTraffic = true;
  await Promise.all(traffic);
  return { workers: 6, baseline, consoleDown, dbLocked, tokenRotation, lbFrozen, rotationLbAway };
}

async function cleanUp(): Promise<void> {
  stopTraffic = true;
  for (const child of [...children, fleet]) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  await Promise.all(
    [...children, fleet].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : null)),
  );
  rmSync(dir, { recursive: true, force: true });
}

main().then(
  async (result) => {
    await cleanUp();
    process.stdout.write(`${JSON.stringify(result)}\n`);
  },
  async (error: unknown) => {
    await cleanUp();
    process.stderr.write(`control-plane-faults: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
