// Resolves a region's entrypoint (the URL of its load balancer). The map is either static, or
// fetched from a URL (the console's entrypoint map) and re-fetched periodically, so a failover that
// moves a region's entrypoint to another LB is followed without restarting the client.
import { request, type Dispatcher } from "undici";
import { z } from "zod";

/** `{"us-ashburn": "http://127.0.0.1:4201", ...}`. */
export type EntrypointMap = Record<string, string>;

// The console may wrap the map ({"entrypoints": {...}}) or give each region an object with a url;
// accept those shapes so the client does not break on a richer response.
const EntrypointValue = z.union([z.url(), z.object({ url: z.url() }).transform((v) => v.url)]);
const EntrypointRecord = z.record(z.string().min(1), EntrypointValue);
export const EntrypointMapSchema = z.union([z.object({ entrypoints: EntrypointRecord }).transform((v) => v.entrypoints), EntrypointRecord]);

export function parseEntrypointMap(input: unknown): EntrypointMap {
  return EntrypointMapSchema.parse(input);
}

export interface EntrypointResolverOptions {
  /** A static map, or the URL of a JSON map. */
  source: EntrypointMap | string;
  /** Bearer token for the map URL. */
  token?: string;
  /** Re-fetch interval for a map URL (default 5000 ms). */
  refreshMs?: number;
  /** Per-fetch timeout (default 5000 ms). */
  fetchTimeoutMs?: number;
  dispatcher?: Dispatcher;
}

export interface EntrypointResolver {
  /** Resolves after the first successful map load; rejects if it fails. */
  ready(): Promise<void>;
  /** The current entrypoint of `region`, or undefined when the map has none. */
  get(region: string): string | undefined;
  /** Regions in the current map, sorted. */
  regions(): string[];
  /** Fetches the map now (no-op for a static map). Keeps the previous map if the fetch fails. */
  refresh(): Promise<void>;
  /** Asks for an early refresh after a connection failure; rate-limited to one per second. */
  invalidate(): void;
  /** The last refresh error, if the latest refresh failed. */
  lastError(): Error | undefined;
  close(): void;
}

const MIN_INVALIDATE_GAP_MS = 1000;

export function createEntrypointResolver(options: EntrypointResolverOptions): EntrypointResolver {
  if (typeof options.source !== "string") {
    const map = parseEntrypointMap(options.source);
    return {
      ready: async () => {},
      get: (region) => map[region],
      regions: () => Object.keys(map).sort(),
      refresh: async () => {},
      invalidate: () => {},
      lastError: () => undefined,
      close: () => {},
    };
  }

  const url = options.source;
  let map: EntrypointMap = {};
  let error: Error | undefined;
  let inFlight: Promise<void> | undefined;
  let lastFetchAt = 0;
  let closed = false;

  const fetchOnce = async (): Promise<void> => {
    lastFetchAt = Date.now();
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    try {
      const res = await request(url, {
        headers,
        signal: AbortSignal.timeout(options.fetchTimeoutMs ?? 5000),
        ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
      map = parseEntrypointMap(JSON.parse(text));
      error = undefined;
    } catch (cause) {
      error = new Error(`entrypoint map ${url}: ${(cause as Error).message}`);
      throw error;
    }
  };
  const refresh = (): Promise<void> => {
    inFlight ??= fetchOnce().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  const first = refresh();
  first.catch(() => {}); // surfaced through ready()
  const timer = setInterval(() => {
    if (!closed) refresh().catch(() => {});
  }, options.refreshMs ?? 5000);
  timer.unref();

  return {
    ready: () => first,
    get: (region) => map[region],
    regions: () => Object.keys(map).sort(),
    refresh,
    invalidate: () => {
      if (!closed && Date.now() - lastFetchAt >= MIN_INVALIDATE_GAP_MS) refresh().catch(() => {});
    },
    lastError: () => error,
    close: () => {
      closed = true;
      clearInterval(timer);
    },
  };
}

/** The chat completions URL under an entrypoint that may or may not already end in /v1. */
export function chatCompletionsUrl(entrypoint: string): string {
  const base = entrypoint.replace(/\/+$/, "");
  return base.endsWith("/v1") ? `${base}/chat/completions` : `${base}/v1/chat/completions`;
}
