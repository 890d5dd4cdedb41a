// The refusal log under a spray of bad credentials: every refusal counts, memory stays bounded, and
// the log gets a bounded number of lines however many addresses the spray comes from.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { type Logger, pino } from "pino";
import { Registry } from "prom-client";
import { AuthRefusals } from "./auth-refusals";

function logged(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger: Logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

test("one address refused again and again logs one line per window, the next saying how many it folded", () => {
  const { logger, lines } = logged();
  const refusals = new AuthRefusals(new Registry(), logger);
  for (let i = 0; i < 50; i++) refusals.record("admin", "invalid", { address: "10.0.0.1", path: "/admin/state" }, i * 100);
  assert.equal(lines.length, 1);
  refusals.record("admin", "invalid", { address: "10.0.0.1", path: "/admin/state" }, 10_000);
  assert.equal(lines.length, 2);
  assert.equal(lines[1]?.foldedSinceLastLine, 49);
});

test("a spray from more addresses than the tracked windows (one IPv6 /64) logs a bounded number of lines, paths cut", () => {
  const { logger, lines } = logged();
  const refusals = new AuthRefusals(new Registry(), logger);
  // 1,025 addresses, ten refusals each within one second, round-robin; a path of 16 KB each time.
  const path = `/admin/${"x".repeat(16_000)}`;
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 1_025; i++) refusals.record("admin", "invalid", { address: `2001:db8::${i.toString(16)}`, path }, round * 100);
  }
  assert.ok(lines.length <= 101, `${lines.length} lines for 10,250 refusals`);
  assert.ok(lines.every((line) => String(line.path).length <= 256));
  assert.equal(lines.at(-1)?.address, "*");
  // Memory stays bounded too: 100,000 addresses leave at most the tracked windows.
  for (let i = 0; i < 100_000; i++)
    refusals.record("client", "missing", { address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, path: "/v1/chat/completions" }, 2_000);
  assert.ok((refusals as unknown as { windows: Map<string, unknown> }).windows.size <= 1_024);
});
