// Shared e2e plumbing: logging in without the UI, calling tRPC the way the browser does, and saving
// page screenshots into the test's output directory.
import { expect, type APIRequestContext, type Page, type TestInfo } from "@playwright/test";
import { BASE_URL, lbToken } from "./env";

export interface Credentials {
  username: string;
  password: string;
}

/** Logs the page's browser context in through the real endpoint; the session cookie lands in the context. */
export async function loginViaApi(page: Page, user: Credentials): Promise<void> {
  const res = await page.request.post("/api/auth/login", { data: user, headers: { origin: BASE_URL } });
  expect(res.status(), `login as ${user.username}`).toBe(200);
}

type TrpcEnvelope<T> = { result?: { data?: { json?: T } }; error?: { json?: TrpcErrorShape } };
export interface TrpcErrorShape {
  message: string;
  data?: { code?: string; httpStatus?: number };
}

/** A tRPC query over HTTP with the superjson envelope, using the context's session cookie. */
export async function trpcQuery<T>(request: APIRequestContext, path: string, input?: unknown): Promise<T> {
  const query = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;
  const res = await request.get(`/api/trpc/${path}${query}`);
  const body = (await res.json()) as TrpcEnvelope<T>;
  if (!res.ok() || body.error) throw new Error(`${path} failed (${res.status()}): ${body.error?.json?.message ?? "no body"}`);
  return body.result?.data?.json as T;
}

/** A tRPC mutation over HTTP, returning the status and error so tests can assert on refusals. */
export async function trpcMutation<T>(request: APIRequestContext, path: string, input: unknown): Promise<{ status: number; data?: T; error?: TrpcErrorShape }> {
  const res = await request.post(`/api/trpc/${path}`, {
    data: { json: input },
    // Mutations check Origin (CSRF); a browser sends it, so the test does too.
    headers: { origin: BASE_URL, "content-type": "application/json" },
  });
  const body = (await res.json()) as TrpcEnvelope<T>;
  return { status: res.status(), data: body.result?.data?.json, error: body.error?.json };
}

/**
 * Sets the console's tuning scope through the API, as an operator (the page's session must be one's).
 * The demo tunes with one tuner for the fleet; a spec about an LB's own tuner switches to per LB
 * first and back to the demo's scope after (`fleet` also starts the fleet's tuner, as the demo runs it).
 */
export async function useTuningScope(request: APIRequestContext, scope: "lb" | "fleet"): Promise<void> {
  const switched = await trpcMutation(request, "tuner.setScope", { scope });
  expect(switched.status, `tuning scope ${scope}: ${switched.error?.message}`).toBe(200);
  if (scope === "lb") return;
  const started = await trpcMutation(request, "tuner.start", { fleet: true });
  expect(started.status, `fleet tuner start: ${started.error?.message}`).toBe(200);
}

/** Waits (up to 2 min) until the fleet's tuner runs a trial with samples in both arms. */
export async function fleetTrialInBothArms(request: APIRequestContext): Promise<void> {
  await expect
    .poll(
      async () => {
        const { trial } = await trpcQuery<{ trial: { samples: { incumbent: number; candidate: number } } | null }>(request, "tuner.fleet");
        return trial !== null && trial.samples.incumbent > 0 && trial.samples.candidate > 0;
      },
      { timeout: 120_000, intervals: [2000] },
    )
    .toBe(true);
}

export async function screenshot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  // Let charts lay out and the first live refetch land, so the image shows data rather than spinners.
  await page.waitForLoadState("networkidle").catch(() => undefined);
  await page
    .locator('[data-testid="state-loading"]')
    .first()
    .waitFor({ state: "detached", timeout: 10_000 })
    .catch(() => undefined);
  const path = testInfo.outputPath(`${name}.png`);
  await page.screenshot({ path, fullPage: true });
  await testInfo.attach(name, { path, contentType: "image/png" });
}

/** GET a demo LB's admin API the way the console does: its own token, JSON body. */
export async function lbAdmin<T>(request: APIRequestContext, lb: { id: string; url: string }, path: string): Promise<T> {
  const res = await request.get(`${lb.url.replace(/\/$/, "")}${path}`, { headers: { authorization: `Bearer ${lbToken(lb.id)}` } });
  expect(res.ok(), `${lb.url}${path} → ${res.status()}`).toBeTruthy();
  return (await res.json()) as T;
}

// Row shapes the specs read; a subset of the console's router outputs.
export interface LbRow {
  id: string;
  name: string;
  url: string;
  region: string;
  state: string;
  healthy: boolean;
  policy: string;
  crossRegion: string;
  weights: { rtt: number; queue: number };
  configVersion: number;
  ackedVersion: number | null;
  replicas: string[];
  failedOverTo: string | null;
}
export interface ReplicaRow {
  id: string;
  name: string;
  url: string;
  region: string;
  model: string;
  state: string;
  homeLbId: string | null;
  healthy: boolean;
  share: number;
  /** The serving LB's prefix index against the engine's cache (src/server/runtime/index-status.ts). */
  index: { kind: string; accuracy: number | null; detail: string | null };
}
/** lbs.entrypoints: where each region's clients go (null when no LB is healthy) and why. */
export type Entrypoints = Record<string, { lbId: string | null; url: string | null; assignedLbId: string; status: "assigned" | "fallback" | "unresolved" }>;
