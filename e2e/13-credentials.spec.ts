// Issue 13 items 13 and 15 against the production build and the demo fleet: a client API key created
// on the API keys page is enforced by its region's LB (the openai SDK gets 401 without it, and again
// after it is revoked), counted under its id in the LB's metrics; an LB token rotated on the LBs page
// keeps the LB serving; a listener registered as an LB gets the challenge and no credential. Runs
// last: it changes a region's key requirement (restored at the end) and rotates a demo LB's token.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import OpenAI from "openai";
import { DEMO_MODEL as MODEL } from "../apps/console/src/lib/demo-topology";
import { lbToken, OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcMutation, trpcQuery, type LbRow } from "./helpers";

type LbWithCredential = LbRow & { credential: { keyId: string | null; proven: boolean; retiringKeyId: string | null; error: string | null } };
interface AuditRow {
  action: string;
  target: string;
}

async function ask(lbUrl: string, apiKey: string): Promise<number> {
  const client = new OpenAI({ baseURL: `${lbUrl}/v1`, apiKey, maxRetries: 0 });
  try {
    await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hello" }], max_tokens: 4 });
    return 200;
  } catch (error) {
    if (error instanceof OpenAI.APIError && error.status !== undefined) return error.status;
    throw error;
  }
}

test("a client key created in the console is required by its region's LB and refused after revocation", async ({ page }, testInfo) => {
  test.setTimeout(120_000);
  await loginViaApi(page, OPERATOR);
  const lb = (await trpcQuery<LbRow[]>(page.request, "lbs.list")).find((row) => row.region === "ap-seoul")!;
  try {
    await page.goto("/keys");
    await page.getByTestId("key-create-region").selectOption("ap-seoul");
    await page.getByTestId("key-create-name").fill("e2e-client");
    await page.getByTestId("key-create-submit").click();
    const key = (await page.getByTestId("key-created-value").textContent())?.trim() ?? "";
    expect(key).toMatch(/^mk_[0-9a-f]{12}_/);
    const keyId = key.slice(3, 15);
    await screenshot(page, testInfo, "keys-created");
    await page.getByTestId("key-created-done").click();
    await expect(page.getByTestId("key-created")).toHaveCount(0);
    await page.getByTestId("keys-require-ap-seoul").click();
    await expect(page.getByTestId("keys-region-ap-seoul")).toHaveAttribute("data-required", "true");

    // The LB enforces it once its config arrives: the SDK without the key gets 401, with it an answer.
    await expect.poll(() => ask(lb.url, "sk-no-such-key"), { timeout: 30_000 }).toBe(401);
    expect(await ask(lb.url, key)).toBe(200);
    // The per-key series are for a bearer the LB trusts with them: its LB token (the console's).
    const metrics = await (await page.request.get(`${lb.url}/metrics`, { headers: { authorization: `Bearer ${lbToken(lb.id)}` } })).text();
    expect(metrics).toMatch(new RegExp(`meridian_lb_client_requests_total\\{key_id="${keyId}",key_name="e2e-client",status="200"\\} [1-9]`));
    expect(metrics).not.toContain(key.slice(16));

    await page.getByTestId("key-revoke-e2e-client").click();
    await page.getByTestId("key-revoke-e2e-client-confirm").click();
    await expect(page.getByTestId("key-row-e2e-client")).toHaveAttribute("data-revoked", "true");
    await expect.poll(() => ask(lb.url, key), { timeout: 30_000 }).toBe(401);
    await screenshot(page, testInfo, "keys-revoked");
    const audit = await trpcQuery<AuditRow[]>(page.request, "audit.list", { limit: 100 });
    const actions = audit.map((row) => `${row.action} ${row.target}`);
    expect(actions).toContain(`client-key.create client-key:${keyId}`);
    expect(actions).toContain(`client-key.revoke client-key:${keyId}`);
  } finally {
    await trpcMutation(page.request, "clientKeys.setRequired", { region: "ap-seoul", required: false });
  }
  // Keyless clients are served again.
  await expect.poll(() => ask(lb.url, "sk-anything"), { timeout: 30_000 }).toBe(200);
});

test("an LB token rotated on the LBs page keeps the LB serving", async ({ page }, testInfo) => {
  test.setTimeout(120_000);
  await loginViaApi(page, OPERATOR);
  const lbs = () => trpcQuery<LbWithCredential[]>(page.request, "lbs.list");
  const lb = (await lbs()).find((row) => row.region === "eu-frankfurt")!;
  const before = lb.credential.keyId;
  let stop = false;
  const statuses: number[] = [];
  const traffic = (async () => {
    while (!stop) statuses.push(await ask(lb.url, "sk-anything"));
  })();
  try {
    await page.goto("/lbs");
    await page.getByTestId(`lb-rotate-${lb.name}`).click();
    await page.getByTestId(`lb-rotate-${lb.name}-confirm`).click();
    const cell = page.getByTestId(`lb-token-${lb.name}`);
    await expect(cell).not.toHaveAttribute("data-key-id", before ?? "");
    await screenshot(page, testInfo, "lb-token-rotating");
    // The previous token is retired after the grace period (MERIDIAN_LB_TOKEN_GRACE_S in playwright.config.ts).
    await expect
      .poll(async () => (await lbs()).find((row) => row.id === lb.id)?.credential, { timeout: 60_000 })
      .toMatchObject({ retiringKeyId: null, proven: true });
    await expect(cell).toHaveAttribute("data-retiring", "");
    await expect.poll(() => statuses.length, { timeout: 30_000 }).toBeGreaterThan(5);
  } finally {
    stop = true;
    await traffic;
  }
  expect(new Set(statuses)).toEqual(new Set([200]));
});

test("a listener registered as an LB is challenged and receives no credential", async ({ page }) => {
  test.setTimeout(90_000);
  await loginViaApi(page, OPERATOR);
  const seen: { path: string; authorization: string | undefined }[] = [];
  const listener: Server = createServer((req, res) => {
    seen.push({ path: req.url ?? "/", authorization: req.headers.authorization });
    req.resume();
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  const created = await trpcMutation<{ id: string }>(page.request, "lbs.create", { name: "e2e-impostor", url, region: "us-ashburn" });
  expect(created.status).toBe(200);
  const id = created.data!.id;
  try {
    await expect
      .poll(async () => (await trpcQuery<LbWithCredential[]>(page.request, "lbs.list")).find((row) => row.id === id)?.credential.error ?? "", {
        timeout: 30_000,
      })
      .toMatch(/not a Meridian LB/);
    await expect.poll(() => seen.filter((r) => r.path.startsWith("/admin/proof")).length, { timeout: 30_000 }).toBeGreaterThan(2);
    expect(seen.filter((r) => r.authorization !== undefined)).toEqual([]);
    expect(seen.every((r) => r.path === "/health" || r.path.startsWith("/admin/proof?nonce="))).toBe(true);
    const peer = await trpcQuery<{ configs: { config: { peers: { id: string }[] } }[] }>(page.request, "lbs.byId", { id: "lb-us-ashburn" });
    expect(peer.configs[0]?.config.peers.map((p) => p.id)).not.toContain(id);
  } finally {
    await trpcMutation(page.request, "lbs.delete", { id });
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  }
});
