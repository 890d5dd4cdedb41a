// A fake meridian-proxy admin API on loopback port 0, for tests: GET /health, GET /admin/proof
// (answers the console's challenge for the tokens it holds), GET /admin/state, GET and PUT
// /admin/config (PUT: 409 unless the version is newer), GET /admin/telemetry?since=N (NDJSON), POST /admin/credentials
// (install / retire). It records every Authorization header it receives.
import "server-only";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { LB_CREDENTIALS_STATUS_SCHEMA, LB_PROOF_SCHEMA, LB_STATE_SCHEMA, type LbConfig, type LbState, type TelemetryEvent } from "@meridian/protocol";
import { deriveLbKey, lbKeyId, proofMac } from "@meridian/protocol/credentials";
import { DEFAULT_WEIGHTS } from "@meridian/routing/types";
import { telemetryEvent } from "./telemetry-event";

export interface FakeLb {
  url: string;
  /** The LB tokens it holds, newest first (what the proxy keeps in its credentials file). */
  tokens: string[];
  /** Every Authorization header any request to it carried. */
  authorizations: string[];
  configs: LbConfig[];
  /** Current config version (0 before any PUT). */
  version: number;
  healthy: boolean;
  /** Answer PUT /admin/config with this status instead of applying it. */
  failPuts: number | null;
  /** Answer GET /admin/config with this status instead of the config it runs (a 503 while it starts). */
  failConfigReads: number | null;
  /** How many GET /admin/config requests it answered, whatever the answer. */
  configReads: number;
  telemetryRequests: string[];
  emit(partial?: Partial<TelemetryEvent>): TelemetryEvent;
  /** Closes every open telemetry stream (the LB "restarts" its streams). */
  dropStreams(): void;
  /** Its ring no longer holds events up to `seq`: a subscription from before it gets a `dropped` line. */
  forget(seq: number): void;
  close(): Promise<void>;
}

/** `port`: listen there (an LB that comes up where the console already expects it); default any.
 * `rttMs`: what the LB reports measuring to a replica; default 37 ms in its region, 300 ms elsewhere. */
export async function startFakeLb(options: {
  id: string;
  region: string;
  /** null: it holds no token (an LB not yet configured, or a listener that is not this LB). */
  token: string | null;
  port?: number;
  rttMs?: (replica: { id: string; region: string }) => number;
  /** An LB started from its own config file: GET /admin/config answers it until the first push,
   * then the config pushed last. Without it GET /admin/config is 404 (an older LB build), so the
   * console adopts nothing and a test of something else is not slowed by adoption rounds. */
  running?: LbConfig;
}): Promise<FakeLb> {
  const events: TelemetryEvent[] = [];
  /** The newest seq its ring no longer holds (0: it holds every event). */
  let forgotten = 0;
  const streams = new Set<ServerResponse>();
  const lb: FakeLb = {
    url: "",
    tokens: options.token ? [options.token] : [],
    authorizations: [],
    configs: [],
    version: 0,
    healthy: true,
    failPuts: null,
    failConfigReads: null,
    configReads: 0,
    telemetryRequests: [],
    emit(partial = {}) {
      const event = telemetryEvent({
        seq: events.length + 1,
        time: Date.now(),
        lbId: options.id,
        region: options.region,
        configVersion: lb.version,
        predictedCachedTokens: 50,
        actualCachedTokens: 50,
        ...partial,
      });
      events.push(event);
      for (const res of streams) res.write(`${JSON.stringify({ type: "event", event })}\n`);
      return event;
    },
    dropStreams() {
      for (const res of streams) res.destroy();
      streams.clear();
    },
    forget(seq) {
      forgotten = Math.max(forgotten, Math.min(seq, events.length));
    },
    close: async () => {
      lb.dropStreams();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const authorised = (req: IncomingMessage) => lb.tokens.some((token) => req.headers.authorization === `Bearer ${token}`);

  function state(): LbState {
    const config = lb.configs.at(-1);
    return {
      schema: LB_STATE_SCHEMA,
      lbId: options.id,
      region: options.region,
      configVersion: lb.version,
      policy: config?.policy ?? "gorgo",
      weights: config?.weights ?? { ...DEFAULT_WEIGHTS },
      crossRegion: config?.crossRegion ?? "direct",
      startedAt: 0,
      replicas: (config?.replicas ?? []).map((r) => ({
        id: r.id,
        url: r.url,
        region: r.region,
        model: r.model,
        state: r.state,
        healthy: true,
        rttMs: options.rttMs ? options.rttMs(r) : r.region === options.region ? 37 : 300,
        inFlight: 1,
        queuedTokens: 10,
        peerQueuedTokens: 0,
        full: false,
        share: 0.5,
        requests: 2,
        cacheHitRate: 0.5,
        predictionAccuracy: 0.9,
        scrape: { ok: true, ageMs: 10, error: null, running: 1, waiting: 0, usedTokens: 10 },
        cache: {
          accuracy: 0.9,
          windowMs: 300_000,
          reports: 2,
          unreported: 0,
          cachedTokensReported: true,
          predictedTokens: 10,
          actualTokens: 9,
          capacityTokens: 262_144,
          capacitySource: "metrics" as const,
          budgetBlocks: 16_384,
          horizonMs: null,
          routes: 2,
          clears: 0,
          lastClearAt: null,
          lastClearReason: null,
        },
      })),
      queue: { length: 0, maxLength: 256, oldestWaitMs: 0 },
      index: { routes: 0, blocks: 0, evictions: 0, hits: 0, lookups: 0 },
      totals: { requests: events.length, errors: 0, forwarded: 0, queued: 0 },
      telemetry: { lastSeq: events.length, bufferSize: events.length },
      peers: [],
    };
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.headers.authorization) lb.authorizations.push(req.headers.authorization);
    if (url.pathname === "/health") {
      res.writeHead(lb.healthy ? 200 : 503).end(lb.healthy ? "ok" : "down");
      return;
    }
    if (url.pathname === "/admin/proof" && req.method === "GET") {
      const nonce = url.searchParams.get("nonce") ?? "";
      const proofs = lb.tokens.map((token) => ({ keyId: lbKeyId(token), mac: proofMac(deriveLbKey(token).proofKey, options.id, nonce) }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ schema: LB_PROOF_SCHEMA, lbId: options.id, nonce, proofs }));
      return;
    }
    if (!authorised(req)) {
      res.writeHead(401).end();
      return;
    }
    if (url.pathname === "/admin/state" && req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(state()));
      return;
    }
    if (url.pathname === "/admin/config" && req.method === "GET") {
      lb.configReads += 1;
      const running = options.running === undefined ? undefined : (lb.configs.at(-1) ?? options.running);
      if (lb.failConfigReads !== null) res.writeHead(lb.failConfigReads).end();
      else if (running === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(running));
      return;
    }
    if (url.pathname === "/admin/config" && req.method === "PUT") {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        if (lb.failPuts !== null) {
          res.writeHead(lb.failPuts, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "nope" } }));
          return;
        }
        const config = JSON.parse(body) as LbConfig;
        if (config.version <= lb.version) {
          res.writeHead(409, { "content-type": "application/json" }).end(
            JSON.stringify({
              error: { message: `stale version ${config.version}; running ${lb.version}`, type: "conflict", code: "stale_config" },
              currentVersion: lb.version,
            }),
          );
          return;
        }
        lb.version = config.version;
        lb.configs.push(config);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, version: config.version }));
      });
      return;
    }
    if (url.pathname === "/admin/credentials" && req.method === "POST") {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const update = JSON.parse(body) as { install?: string; retire?: string[] };
        if (update.install && !lb.tokens.includes(update.install)) lb.tokens.unshift(update.install);
        if (update.retire) lb.tokens = lb.tokens.filter((token) => !update.retire?.includes(lbKeyId(token)));
        const status = { schema: LB_CREDENTIALS_STATUS_SCHEMA, lbId: options.id, keyIds: lb.tokens.map(lbKeyId) };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(status));
      });
      return;
    }
    if (url.pathname === "/admin/telemetry" && req.method === "GET") {
      const since = Number(url.searchParams.get("since") ?? 0);
      lb.telemetryRequests.push(String(since));
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      // As the proxy's ring does: what it no longer holds is one `dropped` line, then the events.
      if (since < forgotten) res.write(`${JSON.stringify({ type: "dropped", fromSeq: since + 1, toSeq: forgotten, count: forgotten - since })}\n`);
      for (const event of events) if (event.seq > Math.max(since, forgotten)) res.write(`${JSON.stringify({ type: "event", event })}\n`);
      res.write(`${JSON.stringify({ type: "heartbeat", seq: events.length, time: Date.now() })}\n`);
      streams.add(res);
      req.on("close", () => streams.delete(res));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  lb.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return lb;
}
