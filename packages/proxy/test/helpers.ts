// Shared fixtures for the proxy integration tests: simulated engines in three emulated regions on
// loopback, a fake engine that holds every completion until the test answers it, LBs in front of
// them, and small HTTP helpers. Everything binds 127.0.0.1 on port 0 and is closed by handle at the
// end of each test.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { request } from "undici";
import { DEMO_ENGINE_PARAMS, startEngineServer, type EngineServer } from "@meridian/sim";
import type { LbConfigInput, LbState } from "@meridian/protocol";
import { peerCredentialHash } from "@meridian/protocol/credentials";
import { startProxy, type RunningProxy, type StartProxyOptions } from "../src/index";

export const REGIONS = ["us-ashburn", "eu-frankfurt", "ap-seoul"] as const;
export type Region = (typeof REGIONS)[number];
export const MODEL = "meridian-sim-8b";
/** The LB token every test LB holds unless a test gives its own (an LB token as the console issues
 * them: mlt_ and 43 base64url characters). */
export const TOKEN = `mlt_${"t".repeat(43)}`;

/** Small RTTs keep tests fast while keeping the regions clearly apart. */
const RTT_MATRIX: Record<string, Record<string, number>> = {
  "us-ashburn": { "us-ashburn": 2, "eu-frankfurt": 60, "ap-seoul": 100 },
  "eu-frankfurt": { "eu-frankfurt": 2, "ap-seoul": 80 },
  "ap-seoul": { "ap-seoul": 2 },
};

export { DEMO_ENGINE_PARAMS };

const quietLogger = pino({ level: "silent" });

export interface Engine extends EngineServer {
  id: string;
  region: Region;
}

export type EngineParamsOverride = Parameters<typeof startEngineServer>[0]["params"];

export async function startEngine(
  id: string,
  region: Region,
  options: { dialect?: "sglang" | "vllm"; params?: EngineParamsOverride; model?: string; port?: number; cacheReport?: boolean } = {},
): Promise<Engine> {
  const server = await startEngineServer({
    ...(options.port !== undefined ? { port: options.port } : {}),
    id,
    region,
    model: options.model ?? MODEL,
    dialect: options.dialect ?? "sglang",
    rttMatrix: RTT_MATRIX,
    ...(options.params ? { params: options.params } : {}),
    ...(options.cacheReport !== undefined ? { cacheReport: options.cacheReport } : {}),
  });
  return Object.assign(server, { id, region });
}

export function lbConfig(
  lbId: string,
  region: Region,
  engines: readonly Pick<Engine, "id" | "url" | "region">[],
  extra: Partial<LbConfigInput> = {},
): LbConfigInput {
  return {
    schema: "meridian.lb-config/1",
    version: 1,
    lbId,
    region,
    replicas: engines.map((e) => ({ id: e.id, url: e.url, region: e.region, model: MODEL, engine: "sglang" })),
    probes: { rttIntervalMs: 200, scrapeIntervalMs: 50, unhealthyAfter: 2 },
    ...extra,
  };
}

/** A peer entry for an LB's config, with the hash of the credential that peer polls with (the
 * console puts it there; see docs/ARCHITECTURE.md, "LB credentials"). */
export function peerEntry(
  lb: { url: string },
  id: string,
  region: string,
  token = TOKEN,
): { id: string; url: string; region: string; credentialHashes: string[] } {
  return { id, url: lb.url, region, credentialHashes: [peerCredentialHash(token)] };
}

export async function startLb(config: LbConfigInput, options: Partial<StartProxyOptions> = {}): Promise<RunningProxy> {
  return startProxy({
    token: TOKEN,
    logger: quietLogger,
    seed: 7,
    ...options,
    config,
    settings: { port: 0, host: "127.0.0.1", peerPollIntervalMs: 50, telemetryHeartbeatMs: 200, ...(options.settings ?? {}) },
  });
}

export function chatBody(userText: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: MODEL,
    messages: [
      { role: "system", content: "You are a helpful assistant. ".repeat(8) },
      { role: "user", content: userText },
    ],
    max_tokens: 8,
    ...extra,
  };
}

export interface PostResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<PostResult> {
  const response = await request(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
}

/**
 * Two LBs that are each other's peer, both polled healthy. LB URLs exist only once both listen, so
 * the peers arrive with config version 2. `us` and `eu` are each LB's first config (lbId and region
 * are read from them).
 */
export async function startPeeredPair(us: LbConfigInput, eu: LbConfigInput): Promise<[RunningProxy, RunningProxy]> {
  const lbUs = await startLb(us);
  const lbEu = await startLb(eu);
  await adminPutConfig(lbUs, { ...us, version: 2, peers: [peerEntry(lbEu, eu.lbId, eu.region)] });
  await adminPutConfig(lbEu, { ...eu, version: 2, peers: [peerEntry(lbUs, us.lbId, us.region)] });
  await waitFor("peers polled", async () => {
    const [a, b] = await Promise.all([adminGet<LbStateLike>(lbUs, "/admin/state"), adminGet<LbStateLike>(lbEu, "/admin/state")]);
    return a.peers[0]?.healthy && b.peers[0]?.healthy ? true : undefined;
  });
  return [lbUs, lbEu];
}

type LbStateLike = { peers: { healthy: boolean }[] };

export async function adminGet<T>(lb: RunningProxy, path: string): Promise<T> {
  const response = await request(`${lb.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${text}`);
  return JSON.parse(text) as T;
}

/** Pushes a config over the admin API, as the console does; anything but 200 fails the test. */
export async function adminPutConfig(lb: RunningProxy, config: LbConfigInput): Promise<void> {
  const response = await request(`${lb.url}/admin/config`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(config),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`PUT /admin/config: ${response.statusCode} ${text}`);
}

/** Polls until `check` returns a value (not undefined/false) or the deadline passes. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Replica id that served a response (LB header). */
export function servedBy(result: PostResult): string | undefined {
  const value = result.headers["x-meridian-replica"];
  return typeof value === "string" ? value : undefined;
}

/** A completion a HoldingEngine received: the test answers it (or not) through `res`. */
export interface HeldCompletion {
  body: string;
  res: ServerResponse;
  /** The LB's connection for it closed: the LB gave up on it, or a stream it carried ended. */
  closed: boolean;
}

/** A fake SGLang engine that answers /health and /metrics like an idle one and holds every
 * completion, in `held` in arrival order, until the test answers it. */
export interface HoldingEngine {
  id: string;
  region: Region;
  url: string;
  held: HeldCompletion[];
  close(): Promise<void>;
}

/** Listens on a loopback port; closing drops open connections first (a held request would keep
 * server.close waiting). */
export async function listenLoopback(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export async function startHoldingEngine(id: string, region: Region): Promise<HoldingEngine> {
  const held: HeldCompletion[] = [];
  const server = createServer((req, res) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const completion: HeldCompletion = { body: Buffer.concat(chunks).toString("utf8"), res, closed: false };
      res.on("close", () => (completion.closed = true));
      held.push(completion);
    });
  });
  return { id, region, held, ...(await listenLoopback(server)) };
}

/** One streamed chat chunk carrying `content`, as an engine sends it. */
export function sseChunk(content: string): string {
  return `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
}

/** A non-streamed chat completion answering with `content`. */
export function completionJson(content: string): string {
  return JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }] });
}

/** An LB (lb-us) in front of one holding engine, its replica probed healthy: the index tests' fleet.
 * `routes()` is the LB index's routes to that replica, what it has learned so far. */
export async function startHeldReplicaLb(engineId: string, extra: Partial<LbConfigInput> = {}) {
  const engine = await startHoldingEngine(engineId, "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], extra));
  await waitFor("the replica probed healthy", async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.replicas.every((r) => r.healthy) ? state : undefined;
  });
  return {
    engine,
    lb,
    routes: async (): Promise<number> => (await adminGet<LbState>(lb, "/admin/state")).replicas[0]!.cache.routes,
    close: async (): Promise<void> => {
      await lb.close();
      await engine.close();
    },
  };
}
