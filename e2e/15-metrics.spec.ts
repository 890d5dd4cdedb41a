// Issue 15 item 8 against the production build: the console's GET /metrics answers the Playwright
// runner (a loopback client) with the control plane's series, and each demo LB's /metrics carries the
// extended series. promtool (when present; required under CI) finds nothing in either.
import { spawnSync } from "node:child_process";
import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi, trpcQuery, type LbRow } from "./helpers";

function promtoolFindings(text: string): string | null {
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (check.error) {
    if (process.env.CI && process.env.CI !== "0" && process.env.CI !== "false") throw new Error("promtool is required under CI");
    return null;
  }
  return `${check.stdout}${check.stderr}`.trim();
}

test("the console's and the LBs' /metrics carry the control plane's series and lint clean", async ({ page }) => {
  await loginViaApi(page, OPERATOR);
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");

  // No cookie and no token: the runner is on the console's host.
  const res = await page.request.get("/metrics", { headers: { cookie: "" } });
  expect(res.status()).toBe(200);
  const text = await res.text();
  for (const lb of lbs) expect(text).toMatch(new RegExp(`^meridian_console_lb_up\\{lb="${lb.id}"\\} 1$`, "m"));
  expect(text).toMatch(/^meridian_console_config_pushes_total\{lb="[^"]+",result="acked"\} [1-9]/m);
  expect(text).toMatch(/^meridian_console_tuner_state\{lb="[^"]+",state="running"\} 1$/m);
  expect(text).toMatch(/^process_cpu_seconds_total /m);
  expect(promtoolFindings(text) ?? "").toBe("");

  const lbText = await (await page.request.get(`${lbs[0]!.url}/metrics`)).text();
  expect(lbText).toMatch(/^meridian_lb_replica_state\{replica="[^"]+",state="enabled"\} 1$/m);
  expect(lbText).toMatch(new RegExp(`^meridian_lb_config_info\\{lb="${lbs[0]!.id}",`, "m"));
  expect(lbText).toMatch(/^nodejs_eventloop_lag_seconds /m);
  expect(promtoolFindings(lbText) ?? "").toBe("");
});
