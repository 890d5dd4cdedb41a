// Resolves a region's entrypoint (the URL of its load balancer). The map is either static, or
// fetched from a URL (the console's entrypoint map) and re-fetched periodically, so a failover that
// moves a region's entrypoint to another LB is followed without restarting the client.
import { readFile } from "node:fs/promises";
import { request, type Dispatcher } from "undici";
import { z } from "zod";
import { assertTimerMs } from "./timer-limit";

/** `{"us-ashburn": "http://127.0.0.1:4201", ...}`. */
export type EntrypointMap = Record<string, string>;

// The console may wrap the map ({"entrypoints": {...}}) or give each region an object with a url;
// accept those shapes so the client does not break on a richer response.
const HttpUrl = z.url({ protocol: /^https?$/ });
const EntrypointValue = z.union([HttpUrl, z.object({ url: HttpUrl }).transform((v) => v.url)]);
const EntrypointRecord = z.record(z.string().min(1), EntrypointValue);
export const EntrypointMapSchema = z.union([z.object({ entrypoints: EntrypointRecord }).transform((v) => v.entrypoints), EntrypointRecord]);

/** Validates a map; throws a one-line Error naming the region and the problem. */
export function parseEntrypointMap(input: unknown): EntrypointMap {
  const parsed = EntrypointMapSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new Error(entrypointMapProblem(input));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return `${typeof value} ${String(value)}`;
}

/** What is wrong with a map the schema rejected, in one line (zod's own report is multi-line JSON). */
function entrypointMapProblem(input: unknown): string {
  if (!isObject(input)) return `expected a JSON object of region → URL, got ${describeValue(input)}`;
  const wrapped = input.entrypoints;
  const map = isObject(wrapped) && !("url" in wrapped) ? wrapped : input;
  for (const [region, value] of Object.entries(map)) {
    if (region === "") return "a region name is empty";
    const url = isObject(value) ? value.url : value;
    if (!HttpUrl.safeParse(url).success) {
      return `region "${region}": expected an http(s) URL or {"url": "http..."}, got ${isObject(value) ? `url ${describeValue(url)}` : describeValue(value)}`;
    }
  }
  return "invalid entrypoint map";
}

/**
 * The value of `--entrypoints`: an http(s) URL serving the map (returned as is, fetched later),
 * inline JSON, or the path of a JSON file. A bad value throws one line that names the flag and the
 * problem, e.g. `--entrypoints: invalid JSON: ...` or `--entrypoints: region "a": expected ...`.
 */
export async function entrypointsFromFlag(value: string): Promise<EntrypointMap | string> {
  const text = value.trim();
  if (/^https?:\/\//i.test(text)) return text;
  let json = text;
  let flag = "--entrypoints";
  if (!text.startsWith("{") && !text.startsWith("[")) {
    try {
      json = await readFile(text, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") throw new Error(`--entrypoints: no such file "${text}" (expected inline JSON, a URL or a JSON file)`);
      throw new Error(`--entrypoints: cannot read "${text}": ${oneLine((error as Error).message)}`);
    }
    flag = `--entrypoints ${text}`;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new Error(`${flag}: invalid JSON: ${oneLine((error as Error).message)}`);
  }
  let map: EntrypointMap;
  try {
    map = parseEntrypointMap(raw);
  } catch (error) {
    throw new Error(`${flag}: ${(error as Error).message}`);
  }
  if (Object.keys(map).length === 0) throw new Error(`${flag}: the map has no regions`);
  return map;
}

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim();

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
  if (options.refreshMs !== undefined) assertTimerMs("refreshMs", options.refreshMs);
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
  /** The fetch queued behind `inFlight` for callers of refresh() who came while it ran. */
  let queued: Promise<void> | undefined;
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
  /** A fetch now, or the one in flight: for the background refreshes, which want a recent map. */
  const fetchOrJoin = (): Promise<void> => {
    inFlight ??= fetchOnce().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  /** A fetch that starts no earlier than this call: one in flight may answer with the map as it was
   * before the call, so callers who come while it runs share one fetch after it. Joining it, a
   * refresh() right after the console changed its map could resolve with the old one (a test of a
   * bad map read it as good when a background refresh was in flight). Fetches never overlap. */
  const refresh = (): Promise<void> => {
    if (inFlight === undefined) return fetchOrJoin();
    queued ??= inFlight
      .catch(() => {})
      .then(() => {
        queued = undefined;
        return fetchOrJoin();
      });
    return queued;
  };

  const first = fetchOrJoin();
  first.catch(() => {}); // surfaced through ready()
  const timer = setInterval(() => {
    if (!closed) fetchOrJoin().catch(() => {});
  }, options.refreshMs ?? 5000);
  timer.unref();

  return {
    ready: () => first,
    get: (region) => map[region],
    regions: () => Object.keys(map).sort(),
    refresh,
    invalidate: () => {
      if (!closed && Date.now() - lastFetchAt >= MIN_INVALIDATE_GAP_MS) fetchOrJoin().catch(() => {});
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
