// HTTP client for the LBs' admin API (meridian-proxy): GET /health, GET /admin/state,
// PUT /admin/config, GET /admin/telemetry (NDJSON), POST /admin/credentials. Every /admin call
// carries the LB's own token, and only after that LB proved it holds it (lb-challenge.ts): a
// listener at a wrong URL gets the challenge and nothing else. A proof is reused for PROOF_TTL_MS
// at the same admin URL with the same token; a 401 drops it.
import "server-only";
import { Agent, request, type Dispatcher } from "undici";
import {
  LB_CREDENTIALS_UPDATE_SCHEMA,
  safeParseLbCredentialsStatus,
  safeParseLbState,
  type LbConfig,
  type LbCredentialsUpdateInput,
  type LbState,
} from "@meridian/protocol";
import { getText } from "./admin-get";
import { challengeLb } from "./lb-challenge";
import type { LbProofBook } from "./lb-proofs";

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

/** How long a proof lets the console present the token without a new challenge. */
const PROOF_TTL_MS = 30_000;

/** The token the console presents to an LB (its `current` row), or null when none was issued. */
export type LbTokenSource = (lbId: string) => Promise<{ token: string; keyId: string } | null>;

/** What the client needs: each LB's token, where proofs are kept, and the probe timeout. */
export interface LbAdminClientOptions {
  tokens: LbTokenSource;
  proofs: LbProofBook;
  /** Timeout of GET /health, GET /admin/proof and GET /admin/state. */
  timeoutMs: number;
}

/** Thrown (telemetry) or reported (other calls) when the console will not present the LB's token.
 * `answered`: something answered the challenge (as opposed to nothing listening). */
class UnprovenLbError extends Error {
  override name = "UnprovenLbError";
  constructor(
    message: string,
    readonly answered: boolean,
  ) {
    super(message);
  }
}

/** The console could not read the LB's token (its database failed): nothing was sent, the LB refused
 * nothing. putConfig throws it, for the publisher to report and retry as its own failure (a 401
 * would say the LB refused the token); the other calls report its message, which names no SQL. */
export class TokenReadError extends Error {
  override name = "TokenReadError";
  constructor(lbId: string, cause: unknown) {
    super(`the console could not read LB "${lbId}"'s token from its database`, { cause });
  }
}

export class LbAdminClient {
  private readonly dispatcher = new Agent({ connect: { timeout: 2_000 }, keepAliveTimeout: 10_000 });
  private readonly timeoutMs: number;

  constructor(private readonly options: LbAdminClientOptions) {
    this.timeoutMs = options.timeoutMs;
  }

  /** Drops every connection (runtime shutdown). */
  async close(): Promise<void> {
    await this.dispatcher.destroy();
  }

  /**
   * The Authorization header for this LB, once it has proved (recently, at this URL) that it holds
   * the token; otherwise it is challenged first, and on failure no credential is sent at all.
   */
  async auth(lb: LbEndpoint): Promise<Record<string, string>> {
    const token = await this.options.tokens(lb.id).catch((error: unknown) => {
      throw new TokenReadError(lb.id, error);
    });
    if (!token) throw new UnprovenLbError(`no token was issued for LB "${lb.id}": issue one on the LBs page and configure the LB with it`, true);
    const known = this.options.proofs.get(lb.id);
    const fresh =
      known?.provenKeyId === token.keyId && known.adminBase === lb.adminBase && known.provenAt !== null && Date.now() - known.provenAt < PROOF_TTL_MS;
    if (!fresh) {
      const result = await challengeLb(this.dispatcher, lb, token, this.timeoutMs);
      const now = Date.now();
      this.options.proofs.record(lb.id, {
        adminBase: lb.adminBase,
        provenKeyId: result.ok ? result.keyId : null,
        provenAt: result.ok ? now : null,
        held: result.held,
        refused: !result.ok && result.answered,
        error: result.ok ? null : result.error,
        checkedAt: now,
      });
      if (!result.ok) throw new UnprovenLbError(result.answered ? `not proven, nothing sent: ${result.error}` : result.error, result.answered);
    }
    return { authorization: `Bearer ${token.token}` };
  }

  /** What a credentialed call's answer says of the proof: a 401 means the LB no longer holds the
   * token, so prove again before the next credentialed call. Callers outside this client that send
   * its credentials (the adoption's config read) report their answers here too. */
  answered(lb: LbEndpoint, status: number): void {
    if (status === 401) this.options.proofs.invalidate(lb.id);
  }

  /** Installs `token` beside the LB's current ones, or retires key ids; the LB's key ids after it. */
  async updateCredentials(lb: LbEndpoint, update: Omit<LbCredentialsUpdateInput, "schema">): Promise<{ keyIds: string[] } | { error: string }> {
    try {
      const headers = await this.auth(lb);
      const res = await request(joinUrl(lb.adminBase, "/admin/credentials"), {
        method: "POST",
        dispatcher: this.dispatcher,
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ schema: LB_CREDENTIALS_UPDATE_SCHEMA, ...update }),
        headersTimeout: 5_000,
        bodyTimeout: 5_000,
        signal: AbortSignal.timeout(5_000),
      });
      const text = await res.body.text();
      this.answered(lb, res.statusCode);
      if (res.statusCode !== 200) return { error: errorMessage(text) ?? `POST /admin/credentials answered ${res.statusCode}` };
      const parsed = safeParseLbCredentialsStatus(JSON.parse(text));
      return parsed.success ? { keyIds: parsed.data.keyIds } : { error: parsed.error.message };
    } catch (error) {
      return { error: describe(error) };
    }
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
      const { status, text } = await getText(joinUrl(lb.adminBase, "/admin/state"), {
        dispatcher: this.dispatcher,
        headers: await this.auth(lb),
        timeoutMs: this.timeoutMs,
      });
      this.answered(lb, status);
      if (status !== 200) return { state: null, error: `GET /admin/state answered ${status}` };
      const parsed = safeParseLbState(JSON.parse(text));
      return parsed.success ? { state: parsed.data, error: null } : { state: null, error: parsed.error.message };
    } catch (error) {
      return { state: null, error: describe(error) };
    }
  }

  /** Throws TokenReadError when the console could not read the LB's token (nothing was sent). */
  async putConfig(lb: LbEndpoint, config: LbConfig): Promise<PutConfigResult> {
    let headers: Record<string, string>;
    try {
      headers = await this.auth(lb);
    } catch (error) {
      if (error instanceof TokenReadError) throw error;
      if (error instanceof UnprovenLbError && !error.answered) return { kind: "unreachable", message: error.message };
      return { kind: "rejected", status: 401, message: describe(error) };
    }
    try {
      const res = await request(joinUrl(lb.adminBase, "/admin/config"), {
        method: "PUT",
        dispatcher: this.dispatcher,
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(config),
        headersTimeout: 5_000,
        bodyTimeout: 5_000,
        signal: AbortSignal.timeout(5_000),
      });
      const text = await res.body.text();
      this.answered(lb, res.statusCode);
      if (res.statusCode >= 200 && res.statusCode < 300) return { kind: "acked" };
      const message = errorMessage(text) ?? `PUT /admin/config answered ${res.statusCode}`;
      // 409 also answers a config meant for another LB (code "wrong_lb"): no version bump fixes that.
      if (res.statusCode === 409 && errorCode(text) !== "wrong_lb") return { kind: "stale", lbVersion: versionFrom(text), message };
      return { kind: "rejected", status: res.statusCode, message };
    } catch (error) {
      return { kind: "unreachable", message: describe(error) };
    }
  }

  /** Opens the NDJSON telemetry stream after `since` in the sequence of LB process `boot` (null:
   * not known yet). The caller reads and closes the body. Throws UnprovenLbError when the LB did not
   * prove itself. */
  async telemetry(lb: LbEndpoint, resume: TelemetryResume, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const headers = await this.auth(lb);
    const query = `since=${resume.since}${resume.boot === null ? "" : `&boot=${encodeURIComponent(resume.boot)}`}`;
    const res = await request(joinUrl(lb.adminBase, `/admin/telemetry?${query}`), {
      dispatcher: this.dispatcher,
      headers: { ...headers, accept: "application/x-ndjson" },
      headersTimeout: 5_000,
      // Heartbeats keep a live stream busy; 30 s of silence means the LB is gone.
      bodyTimeout: 30_000,
      signal,
    });
    this.answered(lb, res.statusCode);
    return res;
  }
}

/** Where a telemetry subscription resumes: after seq `since` of LB process `boot`. */
export interface TelemetryResume {
  since: number;
  boot: string | null;
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
