// HTTP client for one LB's admin API (meridian-proxy): GET /health, GET /admin/state,
// PUT /admin/config, GET /admin/telemetry (NDJSON). Bearer token on every /admin call.
import "server-only";
import { Agent, request, type Dispatcher } from "undici";
import { safeParseLbState, type LbConfig, type LbState } from "@meridian/protocol";

export interface LbEndpoint {
  id: string;
  /** Base URL of the admin API (the LB's adminUrl, else its url). */
  adminBase: string;
}

export type PutConfigResult =
  | { kind: "acked" }
  /** The LB already runs this version or a newer one; `lbVersion` when the LB said which. */
  | { kind: "stale"; lbVersion: number | null; message: string }
  | { kind: "rejected"; status: number; message: string }
  | { kind: "unreachable"; message: string };

function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}${path}`;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    return code ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/** What the client needs: the LBs' admin bearer token and the probe timeout. */
export interface LbAdminClientOptions {
  token: string;
  /** Timeout of GET /health and GET /admin/state. */
  timeoutMs: number;
}

export class LbAdminClient {
  private readonly dispatcher = new Agent({ connect: { timeout: 2_000 }, keepAliveTimeout: 10_000 });
  private readonly token: string;
  private readonly timeoutMs: number;

  constructor(options: LbAdminClientOptions) {
    this.token = options.token;
    this.timeoutMs = options.timeoutMs;
  }

  /** Drops every connection (runtime shutdown). */
  async close(): Promise<void> {
    await this.dispatcher.destroy();
  }

  private auth(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
  }

  /** True when GET /health answers 2xx within the timeout. */
  async health(lb: LbEndpoint): Promise<{ ok: boolean; error: string | null }> {
    try {
      const res = await request(joinUrl(lb.adminBase, "/health"), {
        dispatcher: this.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await res.body.dump();
      return res.statusCode >= 200 && res.statusCode < 300 ? { ok: true, error: null } : { ok: false, error: `GET /health answered ${res.statusCode}` };
    } catch (error) {
      return { ok: false, error: describe(error) };
    }
  }

  async state(lb: LbEndpoint): Promise<{ state: LbState | null; error: string | null }> {
    try {
      const res = await request(joinUrl(lb.adminBase, "/admin/state"), {
        dispatcher: this.dispatcher,
        headers: this.auth(),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) return { state: null, error: `GET /admin/state answered ${res.statusCode}` };
      const parsed = safeParseLbState(JSON.parse(text));
      return parsed.success ? { state: parsed.data, error: null } : { state: null, error: parsed.error.message };
    } catch (error) {
      return { state: null, error: describe(error) };
    }
  }

  async putConfig(lb: LbEndpoint, config: LbConfig): Promise<PutConfigResult> {
    try {
      const res = await request(joinUrl(lb.adminBase, "/admin/config"), {
        method: "PUT",
        dispatcher: this.dispatcher,
        headers: { ...this.auth(), "content-type": "application/json" },
        body: JSON.stringify(config),
        headersTimeout: 5_000,
        bodyTimeout: 5_000,
        signal: AbortSignal.timeout(5_000),
      });
      const text = await res.body.text();
      if (res.statusCode >= 200 && res.statusCode < 300) return { kind: "acked" };
      const message = errorMessage(text) ?? `PUT /admin/config answered ${res.statusCode}`;
      // 409 also answers a config meant for another LB (code "wrong_lb"): no version bump fixes that.
      if (res.statusCode === 409 && errorCode(text) !== "wrong_lb") return { kind: "stale", lbVersion: versionFrom(text), message };
      return { kind: "rejected", status: res.statusCode, message };
    } catch (error) {
      return { kind: "unreachable", message: describe(error) };
    }
  }

  /** Opens the NDJSON telemetry stream after `since`. The caller reads and closes the body. */
  async telemetry(lb: LbEndpoint, since: number, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    return request(joinUrl(lb.adminBase, `/admin/telemetry?since=${since}`), {
      dispatcher: this.dispatcher,
      headers: { ...this.auth(), accept: "application/x-ndjson" },
      headersTimeout: 5_000,
      // Heartbeats keep a live stream busy; 30 s of silence means the LB is gone.
      bodyTimeout: 30_000,
      signal,
    });
  }
}

function errorMessage(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof body.error === "string") return body.error;
    if (body.error && typeof body.error.message === "string") return body.error.message;
    if (typeof body.message === "string") return body.message;
  } catch {
    // not JSON
  }
  return text.trim().length > 0 ? text.trim().slice(0, 300) : null;
}

function errorCode(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown } };
    return typeof body.error?.code === "string" ? body.error.code : null;
  } catch {
    return null;
  }
}

/** The LB's current version from a 409 body: a number field, or "runs version N" in the message. */
function versionFrom(text: string): number | null {
  try {
    const body = JSON.parse(text) as Record<string, unknown> & { error?: Record<string, unknown> };
    for (const source of [body, body.error ?? {}]) {
      for (const key of ["currentVersion", "current_version", "lbVersion", "version", "activeVersion"]) {
        const value = source[key];
        if (typeof value === "number" && Number.isInteger(value)) return value;
      }
    }
  } catch {
    // fall through to the message
  }
  const match = /runs version (\d+)/.exec(errorMessage(text) ?? "");
  return match ? Number(match[1]) : null;
}
