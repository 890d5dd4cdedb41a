// A request past its first-byte deadline, when no other replica can take it yet, waits on its own
// replica: and it moves the moment another one can, not at limits.headersTimeoutMs (2 minutes). The
// replicas are scripted engines: one holds the request and never answers (as a frozen engine would),
// the other reports a request waiting (full) until the test clears it.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { pino } from "pino";
import { chatBody, lbConfig, post, servedBy, startLb, waitFor } from "./helpers";
import { startScriptedEngine } from "./scripted-engine";

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const thing of open.reverse()) await thing.close();
});

test("a request past its deadline while the other replica is full moves as soon as that replica can take it", async () => {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  open.push(stalled, busy);
  const logs: { msg: string; target?: string }[] = [];
  const config = lbConfig(
    "lb-overdue",
    "us-ashburn",
    [stalled, busy].map((e) => ({ id: e.id, url: e.url, region: "us-ashburn" })),
    {
      // Scrapes only when the test asks (scrapeNow): the busy replica is full until then.
      probes: { rttIntervalMs: 200, scrapeIntervalMs: 600_000, unhealthyAfter: 60 },
      limits: { firstByteMinMs: 200, headersTimeoutMs: 120_000 },
    },
  );
  const lb = await startLb(config, { logger: pino({ level: "info" }, { write: (line: string) => void logs.push(JSON.parse(line)) }) });
  open.push(lb);
  await waitFor("both replicas probed", () => [...lb.balancer.core.replicas.values()].every((r) => r.probed));
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();

  const answer = post(`${lb.url}/v1/chat/completions`, chatBody("overdue"), { "x-session-id": "overdue" });
  await waitFor("the request on the stalled replica", () => stalled.holds("overdue"));
  await waitFor("its deadline passed with nowhere to go", () => logs.some((l) => l.msg.startsWith("no first byte within the deadline; no other target")));
  assert.equal(busy.holds("overdue"), false, "it moved to a full replica");

  // The busy replica's queue empties: the next scrape shows it, and the request moves at once.
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await waitFor("the request on the replica that freed", () => busy.holds("overdue"));
  busy.finish("overdue");
  const result = await answer;
  assert.equal(result.status, 200, result.text);
  assert.equal(servedBy(result), "busy");
  const moves = logs.filter((l) => l.msg === "no first byte within the deadline; re-dispatching");
  assert.deepEqual(
    moves.map((l) => l.target),
    ["stalled"],
  );
});
