// Every answer of the console carries the anti-framing, nosniff and referrer headers (next.config.ts).
import { strict as assert } from "node:assert";
import { test } from "node:test";
import nextConfig from "./next.config";

test("every path gets no-framing, nosniff and same-origin referrer headers, and no script policy that would break Next", async () => {
  const rules = (await nextConfig.headers?.()) ?? [];
  const everywhere = rules.find((rule) => rule.source === "/:path*");
  assert.ok(everywhere, `no rule for every path: ${JSON.stringify(rules)}`);
  const headers = Object.fromEntries(everywhere.headers.map(({ key, value }) => [key.toLowerCase(), value]));
  assert.equal(headers["x-frame-options"], "DENY");
  assert.equal(headers["content-security-policy"], "frame-ancestors 'none'");
  assert.equal(headers["x-content-type-options"], "nosniff");
  assert.equal(headers["referrer-policy"], "same-origin");
  assert.equal(everywhere.has ?? everywhere.missing, undefined, "applies to every request");
});
