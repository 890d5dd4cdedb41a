import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, screenshot } from "./helpers";

test("a page request without a session goes to the login page", async ({ page }) => {
  await page.goto("/replicas");
  await expect(page).toHaveURL(/\/login/);
  await expect(page.getByTestId("login-form")).toBeVisible();
});

test("a wrong password is refused with a message", async ({ page }) => {
  await page.goto("/login");
  await page.getByTestId("login-username").fill(OPERATOR.username);
  await page.getByTestId("login-password").fill("not-the-password");
  await page.getByTestId("login-submit").click();
  await expect(page.getByTestId("login-error")).toBeVisible();
  await expect(page).toHaveURL(/\/login/);
});

test("an operator logs in, sees the shell, and logs out", async ({ page }, testInfo) => {
  await page.goto("/login");
  await page.getByTestId("login-username").fill(OPERATOR.username);
  await page.getByTestId("login-password").fill(OPERATOR.password);
  await screenshot(page, testInfo, "login");
  await page.getByTestId("login-submit").click();

  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId("current-user")).toHaveText(OPERATOR.username);
  await expect(page.getByTestId("current-role")).toHaveText("operator");
  // The only console leads the background duties, and says so (apps/console/README.md, "Two or more consoles").
  await expect(page.getByTestId("leadership")).toHaveText("Leader: this console");
  const health = (await (await page.request.get("/api/health")).json()) as { ok: boolean; leader: { self: boolean; term: number } };
  expect(health.ok).toBe(true);
  expect(health.leader.self).toBe(true);
  expect(health.leader.term).toBeGreaterThan(0);
  for (const nav of ["overview", "regions", "replicas", "lbs", "tuner", "experiments", "audit"]) {
    await expect(page.getByTestId(`nav-${nav}`)).toBeVisible();
  }

  await page.getByTestId("logout").click();
  await expect(page).toHaveURL(/\/login/);
  await page.goto("/");
  await expect(page).toHaveURL(/\/login/);
});

test("a live page whose session disappears sends the operator back to log in", async ({ page }) => {
  await loginViaApi(page, OPERATOR);
  await page.goto("/replicas");
  await expect(page.locator('[data-testid^="replica-row-"]').first()).toBeVisible();

  // As if the session expired: the next live refetch is refused and the page redirects.
  await page.context().clearCookies();
  await expect(page).toHaveURL(/\/login\?next=%2Freplicas/, { timeout: 15_000 });
});
