import { expect, type APIRequestContext, type Page, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { lbAdmin, loginViaApi, screenshot, trpcMutation, trpcQuery, type LbRow, type ReplicaRow } from "./helpers";

// An LB's request limits and a replica's capacity, as an operator edits them on the LBs and replicas
// pages (lb-limits-editor.tsx, replica-capacity-editor.tsx), and the running limits the console
// adopts from each demo LB it stores none for (lb-settings-adoption.ts). The specs share one fleet:
// each test puts back what it changed, through the page, and checks it is back.

interface LimitsRow extends LbRow {
  limits: { set: Record<string, number>; stored: boolean; defaults: Record<string, number> };
}
interface CapacityRow extends ReplicaRow {
  maxConcurrency: number | null;
  cacheCapacityTokens: number | null;
}
interface RunningConfig {
  version: number;
  limits: Record<string, number>;
  replicas: { id: string; maxConcurrency?: number; cacheCapacityTokens?: number }[];
}
interface AuditRow {
  action: string;
  target: string;
}

const SIXTEEN_MIB = 16 * 1024 * 1024;

const lbsList = (request: APIRequestContext) => trpcQuery<LimitsRow[]>(request, "lbs.list");
const lbNamed = async (request: APIRequestContext, id: string) => (await lbsList(request)).find((l) => l.id === id)!;
/** The audit rows of one action on one target (both prefixes to the console: `target` is exact here). */
const audited = async (request: APIRequestContext, action: string, target: string) =>
  (await trpcQuery<AuditRow[]>(request, "audit.list", { action, target, limit: 1000 })).filter((r) => r.action === action && r.target === target);

/** The LB's "Config pushed / acked" cell as numbers, or null while it shows no acked version. */
async function versionsOnPage(page: Page, lbName: string): Promise<{ pushed: number; acked: number } | null> {
  const text = (await page.getByTestId(`lb-version-${lbName}`).textContent()) ?? "";
  const match = /v(\d+) \/ v(\d+)/.exec(text);
  return match ? { pushed: Number(match[1]), acked: Number(match[2]) } : null;
}

/** Waits until the page shows the LB acknowledging `version` or a later one (the fleet's tuner may
 * push newer ones meanwhile), in sync with what the console pushed. */
async function expectAckedOnPage(page: Page, lbName: string, version: number): Promise<void> {
  await expect
    .poll(
      async () => {
        const v = await versionsOnPage(page, lbName);
        return v !== null && v.acked >= version && v.acked === v.pushed;
      },
      { timeout: 30_000, message: `${lbName} acknowledges v${version} or later` },
    )
    .toBe(true);
}

/** Waits until the LB runs `maxBodyBytes` (GET /admin/config, with its token) and returns the version
 * it runs it at: the LB accepted that config, whatever the tuner pushed around it. */
async function runningWith(request: APIRequestContext, lb: LbRow, maxBodyBytes: number): Promise<number> {
  let version = -1;
  await expect
    .poll(
      async () => {
        const running = await lbAdmin<RunningConfig>(request, lb, "/admin/config");
        version = running.version;
        return running.limits.maxBodyBytes;
      },
      { timeout: 30_000, message: `${lb.name} runs maxBodyBytes ${maxBodyBytes}` },
    )
    .toBe(maxBodyBytes);
  return version;
}

/** The limits editor's summary for a set of stored limits, as the page words it. */
const limitsSummary = (set: Record<string, number>) => `Limits (${Object.keys(set).length === 0 ? "all defaults" : `${Object.keys(set).length} set`})`;

test("the demo LBs' running limits are adopted; an operator sets maxBodyBytes, the LB acknowledges it, a bad value changes nothing", async ({
  page,
}, testInfo) => {
  await loginViaApi(page, OPERATOR);
  const lbs = await lbsList(page.request);
  await page.goto("/lbs");
  await expect(page.getByTestId("lb-table")).toBeVisible();

  // Adoption: every demo LB's limits are the console's own once it has read them (the demo LBs run
  // the protocol's defaults), each audited once; the page no longer says "not adopted yet".
  for (const lb of lbs) {
    await expect(page.getByTestId(`lb-limits-${lb.name}`).locator("summary")).toHaveText(/^Limits \((all defaults|\d+ set)\)$/, { timeout: 30_000 });
    await expect(page.getByTestId(`lb-limits-pending-${lb.name}`)).toHaveCount(0);
  }
  await expect.poll(async () => (await lbsList(page.request)).every((lb) => lb.limits.stored)).toBe(true);
  for (const lb of lbs) expect(await audited(page.request, "lb.adopt-settings", `lb:${lb.id}`), `one lb.adopt-settings for ${lb.name}`).toHaveLength(1);

  const lb = await lbNamed(page.request, lbs[0]!.id);
  const before = lb.limits.set;
  const summary = page.getByTestId(`lb-limits-${lb.name}`).locator("summary");
  const field = page.getByTestId(`lb-limit-${lb.name}-maxBodyBytes`);
  const apply = page.getByTestId(`lb-limits-apply-${lb.name}`);
  const error = page.getByTestId(`lb-limits-error-${lb.name}`);
  const openEditor = async () => {
    // Applying remounts the editor with the stored values, closed: open it when it is.
    if (!(await field.isVisible())) await summary.click();
    await expect(field).toBeVisible();
  };
  expect(before.maxBodyBytes, "the demo LB runs the default maxBodyBytes").toBeUndefined();

  try {
    // Set: the summary counts it, the field shows it, and the LB runs it at a version it acknowledged.
    await openEditor();
    await expect(field).toHaveValue("");
    await expect(field).toHaveAttribute("placeholder", `${lb.limits.defaults.maxBodyBytes} (default)`);
    await field.fill(String(SIXTEEN_MIB));
    await apply.click();
    await expect(summary).toHaveText(limitsSummary({ ...before, maxBodyBytes: SIXTEEN_MIB }));
    await openEditor();
    await expect(field).toHaveValue(String(SIXTEEN_MIB));
    await expect(error).toHaveCount(0);
    const setVersion = await runningWith(page.request, lb, SIXTEEN_MIB);
    expect(setVersion, "a new config version carries it").toBeGreaterThan(lb.configVersion);
    await expectAckedOnPage(page, lb.name, setVersion);
    await screenshot(page, testInfo, "lb-limits-set");

    // Bad values: the field is named, nothing is stored and no update is audited.
    const updatesBefore = (await audited(page.request, "lb.update", `lb:${lb.id}`)).length;
    for (const [bad, says] of [
      ["-5", "maxBodyBytes"],
      ["abc", "limits.maxBodyBytes: expected a whole number"],
      ["1.5", "limits.maxBodyBytes: expected a whole number"],
    ] as const) {
      await field.fill(bad);
      await apply.click();
      await expect(error, `the error for ${bad}`).toContainText(says);
      await expect(summary).toHaveText(limitsSummary({ ...before, maxBodyBytes: SIXTEEN_MIB }));
    }
    const afterBad = await lbNamed(page.request, lb.id);
    expect(afterBad.limits.set).toEqual({ ...before, maxBodyBytes: SIXTEEN_MIB });
    expect(await audited(page.request, "lb.update", `lb:${lb.id}`)).toHaveLength(updatesBefore);
    expect((await lbAdmin<RunningConfig>(page.request, lb, "/admin/config")).limits.maxBodyBytes).toBe(SIXTEEN_MIB);

    // Back as it was: blank is "the default", pushed and acknowledged.
    await field.fill("");
    await apply.click();
    await expect(error).toHaveCount(0);
    await expect(summary).toHaveText(limitsSummary(before));
    expect((await lbNamed(page.request, lb.id)).limits.set).toEqual(before);
    const restoredVersion = await runningWith(page.request, lb, lb.limits.defaults.maxBodyBytes!);
    expect(restoredVersion).toBeGreaterThan(setVersion);
    await expectAckedOnPage(page, lb.name, restoredVersion);
  } finally {
    // A failure above must not leave the next specs a changed fleet.
    if (JSON.stringify((await lbNamed(page.request, lb.id)).limits.set) !== JSON.stringify(before)) {
      await trpcMutation(page.request, "lbs.update", { id: lb.id, limits: before });
    }
  }
});

test("an operator sets and clears a replica's maxConcurrency; the LB runs it; a bad value changes nothing", async ({ page }) => {
  await loginViaApi(page, OPERATOR);
  const replicas = await trpcQuery<CapacityRow[]>(page.request, "replicas.list");
  const replica = replicas.find((r) => r.homeLbId !== null)!;
  const home = (await lbsList(page.request)).find((l) => l.id === replica.homeLbId)!;
  const before = { maxConcurrency: replica.maxConcurrency, cacheCapacityTokens: replica.cacheCapacityTokens };
  expect(before, "the demo's replicas take their capacity from the engine").toEqual({ maxConcurrency: null, cacheCapacityTokens: null });
  const runningCapacity = async () => {
    const running = await lbAdmin<RunningConfig>(page.request, home, "/admin/config");
    return running.replicas.find((r) => r.id === replica.id)?.maxConcurrency ?? null;
  };

  await page.goto("/replicas");
  const summary = page.getByTestId(`replica-capacity-${replica.name}`).locator("summary");
  const field = page.getByTestId(`replica-maxConcurrency-${replica.name}`);
  const apply = page.getByTestId(`replica-capacity-apply-${replica.name}`);
  const error = page.getByTestId(`replica-capacity-error-${replica.name}`);
  const openEditor = async () => {
    if (!(await field.isVisible())) await summary.click();
    await expect(field).toBeVisible();
  };
  await expect(summary).toHaveText("Capacity (from the engine)");

  try {
    await openEditor();
    await field.fill("7");
    await apply.click();
    await expect(summary).toHaveText("Capacity (max 7)");
    await expect(error).toHaveCount(0);
    await expect.poll(runningCapacity, { timeout: 30_000, message: `${home.name} runs maxConcurrency 7` }).toBe(7);

    const updatesBefore = (await audited(page.request, "replica.update", `replica:${replica.id}`)).length;
    for (const [bad, says] of [
      ["0", "maxConcurrency"],
      ["-5", "maxConcurrency"],
      ["abc", "maxConcurrency: expected a whole number"],
    ] as const) {
      await openEditor();
      await field.fill(bad);
      await apply.click();
      await expect(error, `the error for ${bad}`).toContainText(says);
      await expect(summary).toHaveText("Capacity (max 7)");
    }
    const afterBad = (await trpcQuery<CapacityRow[]>(page.request, "replicas.list")).find((r) => r.id === replica.id)!;
    expect(afterBad.maxConcurrency).toBe(7);
    expect(await audited(page.request, "replica.update", `replica:${replica.id}`)).toHaveLength(updatesBefore);
    expect(await runningCapacity()).toBe(7);

    // Cleared: the LB learns it from the engine again.
    await field.fill("");
    await apply.click();
    await expect(summary).toHaveText("Capacity (from the engine)");
    await expect(error).toHaveCount(0);
    await expect.poll(runningCapacity, { timeout: 30_000, message: `${home.name} no longer has a maxConcurrency for ${replica.name}` }).toBeNull();
  } finally {
    const now = (await trpcQuery<CapacityRow[]>(page.request, "replicas.list")).find((r) => r.id === replica.id)!;
    if (now.maxConcurrency !== before.maxConcurrency || now.cacheCapacityTokens !== before.cacheCapacityTokens) {
      await trpcMutation(page.request, "replicas.update", { id: replica.id, ...before });
    }
  }
});
