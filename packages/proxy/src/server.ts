// The HTTP front of one regional LB on node:http, and startProxy(), which tests, the demo and the CLI
// use to run one. Routes: the OpenAI-compatible API, GET /health, GET /metrics (the per-client-key
// series only for a trusted bearer, metrics-access.ts) and /admin/*.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, Server as NetServer } from "node:net";
import { pino, type Logger } from "pino";
import type { PlacementLogEntry } from "@meridian/lb-core";
import { parseLbConfig, type LbConfig, type LbConfigInput } from "@meridian/protocol";
import { handleAdmin } from "./admin";
import { AuthRefusals } from "./auth-refusals";
import { Balancer } from "./balancer";
import { unauthorized } from "./admin-auth";
import { admitClient } from "./client-entrance";
import { ClientMetrics } from "./client-metrics";
import { ConfigStore } from "./config-store";
import { HttpError, notFound, sendError, sendJson } from "./errors";
import { coreNow } from "./core-clock";
import { LbCredentials } from "./lb-credentials";
import { metricsReader, metricsTokenDigest } from "./metrics-access";
import { sendModel, sendModelList } from "./models";
import { OpenResponses } from "./open-responses";
import type { InferenceKind } from "./request";
import { credentialsFileFor, parseProcessSettings, type ProcessSettings, type ProcessSettingsInput } from "./settings";

export interface StartProxyOptions {
  /** An LbConfig (validated here; an invalid one throws naming the field). */
  config: LbConfig | LbConfigInput;
  /** Process settings; `port` 0 picks a free port. */
  settings?: ProcessSettingsInput;
  /** This LB's token as the console issued it (MERIDIAN_LB_TOKEN). Its key material joins the ones
   * persisted in the credentials file; with neither, the admin API refuses every call. */
  token?: string | null;
  logger?: Logger;
  /** Seed for the routing RNG (tie-breaks, random policies). */
  seed?: number;
  /** Observes every placement decision of the LB core (tests compare them with the simulator's). */
  onPlacement?: (entry: PlacementLogEntry) => void;
}

export interface RunningProxy {
  url: string;
  port: number;
  host: string;
  balancer: Balancer;
  settings: ProcessSettings;
  /** Inference responses not yet flushed to their clients, from each request's arrival on (a drain
   * waits for them). */
  openResponses(): number;
  /** Stops at once: stops accepting, answers held requests, ends open streams with an SSE error
   * event, closes pools and timers. During a drain, it cuts the drain short. */
  close(): Promise<void>;
  /** Graceful drain (SIGTERM): stops accepting, refuses new and held requests with 503
   * shutting_down, lets requests in flight finish for up to `deadlineMs`, then close(). */
  drain(deadlineMs: number): Promise<void>;
}

const INFERENCE_PATHS: Record<string, InferenceKind> = {
  "/v1/chat/completions": "chat",
  "/v1/completions": "completion",
  "/v1/embeddings": "embedding",
};
const MODEL_PREFIX = "/v1/models/";

export async function startProxy(options: StartProxyOptions): Promise<RunningProxy> {
  const settings = parseProcessSettings(options.settings ?? {});
  const logger = options.logger ?? pino({ level: "info", name: "meridian-proxy" });
  let config = parseLbConfig(options.config);
  const store = new ConfigStore(settings.stateFile);
  // The last config the console pushed wins over the file, if it is newer and for this LB: the LB
  // keeps serving what it was last told even when the console is unreachable at restart.
  const persisted = store.load();
  if (store.refused) logger.error({ stateFile: settings.stateFile, reason: store.refused }, "persisted config refused; starting from the config file");
  if (persisted && persisted.lbId === config.lbId && persisted.version > config.version) {
    logger.info({ version: persisted.version, stateFile: settings.stateFile }, "using persisted config");
    config = persisted;
  }
  const credentialsFile = credentialsFileFor(settings);
  const { credentials, bootstrap } = LbCredentials.load({ file: credentialsFile, bootstrapToken: options.token ?? null, now: Date.now() });
  if (bootstrap === "retired") logger.warn("MERIDIAN_LB_TOKEN was retired by a token rotation; the LB uses the rotated token from its credentials file");
  if (bootstrap === "full") {
    // Not evicted to make room: a held token may be the one the console uses now.
    logger.error(
      { credentialsFile },
      "MERIDIAN_LB_TOKEN is not held: the credentials file already holds the most tokens an LB keeps (8); retire old ones from the console, or delete the file and start with the console's current token",
    );
  }
  if (credentials.empty) logger.warn("this LB holds no LB token: the admin API refuses every call until one is configured (MERIDIAN_LB_TOKEN)");
  const balancer = new Balancer({
    config,
    settings,
    credentials,
    logger,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.onPlacement ? { onPlacement: options.onPlacement } : {}),
  });
  const refusals = new AuthRefusals(balancer.metrics.registry, logger);
  const clientMetrics = new ClientMetrics();
  const metricsTrust = { metricsTokenDigest: metricsTokenDigest(settings.metricsToken), credentials };
  // Every inference response until it is flushed or its connection is gone: what a drain waits for.
  const openResponses = new OpenResponses();
  // requestTimeout is a backstop for the routes that read a body without a deadline of their own
  // (inference bodies have limits.clientBodyTimeoutMs); node answers it with 408.
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 120_000, headersTimeout: 60_000 }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!(error instanceof HttpError)) logger.error({ err: error }, "request handler failed");
      sendError(res, error instanceof HttpError ? error : new HttpError(500, "internal error", "server_error", "internal_error"));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? "/";
    const queryAt = rawUrl.indexOf("?");
    const pathname = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt);
    const kind = INFERENCE_PATHS[pathname];
    if (kind !== undefined && req.method === "POST") {
      openResponses.track(res, req.socket);
      const client = admitClient(req, res, pathname, { config: balancer.config, refusals, metrics: balancer.metrics, clientMetrics });
      if (client) await balancer.handleInference(kind, pathname, req, res, client);
      return;
    }
    if (req.method === "GET" && pathname === "/health") {
      const routable = [...balancer.core.replicas.values()].filter((r) => r.routable()).length;
      // A draining LB tells health checkers to send nothing more.
      sendJson(res, balancer.draining ? 503 : 200, {
        status: balancer.draining ? "draining" : "ok",
        lbId: balancer.config.lbId,
        region: balancer.config.region,
        configVersion: balancer.config.version,
        healthyReplicas: routable,
      });
      return;
    }
    if (req.method === "GET" && pathname === "/v1/models") {
      sendModelList(res, balancer.models(), balancer.modelCatalog);
      return;
    }
    if (req.method === "GET" && pathname.startsWith(MODEL_PREFIX) && pathname.length > MODEL_PREFIX.length) {
      sendModel(res, pathname.slice(MODEL_PREFIX.length), balancer.models(), balancer.modelCatalog);
      return;
    }
    if (req.method === "GET" && pathname === "/metrics") {
      const reader = metricsReader(req.headers["authorization"], { ...metricsTrust, config: balancer.config });
      if (reader.kind === "refused") {
        refusals.record("metrics", reader.reason, { address: req.socket.remoteAddress ?? "unknown", path: pathname }, coreNow());
        sendError(res, unauthorized());
        return;
      }
      const { text, contentType } = await balancer.metrics.render(reader.kind === "clients" ? clientMetrics.registry : null);
      res.writeHead(200, { "content-type": contentType });
      res.end(text);
      return;
    }
    if (pathname.startsWith("/admin/")) {
      await handleAdmin(req, res, new URL(rawUrl, "http://lb"), {
        balancer,
        store,
        credentials,
        refusals,
        heartbeatMs: settings.telemetryHeartbeatMs,
        logger,
        onConfigApplied: (next) => clientMetrics.retainConfigured(next),
      });
      return;
    }
    // Drain any body so the connection stays usable for the client's next request.
    req.resume();
    sendError(res, notFound(`no route ${req.method ?? "GET"} ${pathname}`));
  }

  await balancer.start();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(settings.port, settings.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${hostForUrl}:${address.port}`;
  logger.info({ url, lbId: config.lbId, region: config.region, version: config.version, policy: config.policy }, "meridian-proxy listening");
  let closing: Promise<void> | null = null;
  let draining = false;
  return {
    url,
    port: address.port,
    host: settings.host,
    balancer,
    settings,
    openResponses: () => openResponses.size,
    close: () => {
      // A second signal during a drain: stop waiting for what is in flight.
      if (draining) openResponses.wake();
      return (closing ??= closeAll(server, balancer));
    },
    drain: (deadlineMs) => {
      if (closing) return closing;
      draining = true;
      return (closing = drainThenClose(server, balancer, openResponses, deadlineMs, logger));
    },
  };
}

async function closeAll(server: Server, balancer: Balancer): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await balancer.close();
  // Streams still open (telemetry tails) end with the process's LB.
  server.closeAllConnections();
  await closed;
}

async function drainThenClose(server: Server, balancer: Balancer, open: OpenResponses, deadlineMs: number, logger: Logger): Promise<void> {
  balancer.beginDrain();
  // No new connections. Not http.Server.close() yet: it also destroys every connection whose response
  // has ended, one still flushing its answer to the client too (a 12 MB answer was cut at 3.9 MB). A
  // request on a kept-alive connection gets 503 shutting_down with `connection: close` meanwhile.
  const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
  const started = performance.now();
  // Every inference response, from a body still arriving to an answer still being flushed: closing
  // the connections before then cuts them.
  const idle = await open.whenIdle(deadlineMs);
  logger.info({ idle, waitedMs: Math.round(performance.now() - started), deadlineMs }, idle ? "drained" : "drain deadline reached; cutting what is left");
  await balancer.close();
  // http.Server.close() now: the listener is closed already; it stops the server's connection checks.
  server.close();
  server.closeAllConnections();
  await closed;
}
