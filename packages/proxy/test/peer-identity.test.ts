// A peer URL that reaches another LB (an ingress in front of several LBs, a stale URL) must not be
// taken for the configured peer: its report's lbId is the answering LB's, and a report from another
// LB than the one configured is a failed poll, logged as such. Before, lb-us took
// whatever answered at lb-eu's URL as lb-eu's load and availability, and forwarded to it.
import { strict as assert } from "node:assert";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { pino } from "pino";
import type { LbState } from "@meridian/protocol";
import { adminGet, adminPutConfig, lbConfig, MODEL, startHoldingEngine, startLb, waitFor } from "./helpers";

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** An LB's /admin/peer answering as `lbId` in `region` with one free replica; counts its polls. */
async function startReportingLb(lbId: string, region: string): Promise<{ url: string; polls: () => number }> {
  let polls = 0;
  const server = createServer((req, res) => {
    if (!req.url?.startsWith("/admin/peer")) return void res.writeHead(404).end();
    polls++;
    const report = { schema: "meridian.peer-report/1", lbId, region, time: Date.now(), configVersion: 1, replicas: [], queueLength: 0, availableReplicas: 1 };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(report));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, polls: () => polls };
}

/** lb-us, whose peer lb-eu (eu-frankfurt) is configured at `peerUrl`; its log lines in `lines`. */
async function lbUsWithPeerAt(peerUrl: string): Promise<{ lines: string[]; state: () => Promise<LbState> }> {
  const lines: string[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString("utf8"));
        done();
      },
    }),
  );
  const engine = await startHoldingEngine("us-x", "us-ashburn");
  cleanups.push(() => engine.close());
  const config = lbConfig("lb-us", "us-ashburn", [], {
    crossRegion: "via-peer",
    replicas: [{ id: "us-x", url: engine.url, region: "us-ashburn", model: MODEL, engine: "sglang" }],
  });
  const lb = await startLb(config, { logger });
  cleanups.push(() => lb.close());
  await adminPutConfig(lb, { ...config, version: 2, peers: [{ id: "lb-eu", url: peerUrl, region: "eu-frankfurt", credentialHashes: [] }] });
  return { lines, state: () => adminGet<LbState>(lb, "/admin/state") };
}

for (const [what, lbId, region, logged] of [["another LB", "lb-ap", "eu-frankfurt", /peer lb-eu at http:\/\/127\.0\.0\.1:\d+\/? answered as lb-ap/]] as const) {
  test(`a report from ${what} at the peer's URL is a failed poll, logged with who answered`, async () => {
    const other = await startReportingLb(lbId, region);
    const { lines, state } = await lbUsWithPeerAt(other.url);
    const line = await waitFor("the poll failure logged", () => lines.find((l) => logged.test(l)));
    assert.match(line, /peer poll failed/);
    // Several polls later the peer is still not taken for healthy: its report was never used.
    const polled = other.polls();
    await waitFor("two more polls", () => other.polls() >= polled + 2);
    const peer = (await state()).peers.find((p) => p.id === "lb-eu");
    assert.equal(peer?.healthy, false, JSON.stringify(peer));
    assert.equal(peer?.availableReplicas, 0);
  });
}

test("the configured LB answering at its URL is polled healthy", async () => {
  const eu = await startReportingLb("lb-eu", "eu-frankfurt");
  const { state } = await lbUsWithPeerAt(eu.url);
  await waitFor("lb-eu healthy", async () => ((await state()).peers[0]?.healthy ? true : undefined));
});

// The console pushes a region's new name to each LB on its own: until the peer has taken its push, it
// reports the old name. Its identity is its id; the region this LB routes by is the configured one.
test("the configured LB reporting another region name (a rename being pushed) is polled healthy", async () => {
  const eu = await startReportingLb("lb-eu", "eu-old-name");
  const { state } = await lbUsWithPeerAt(eu.url);
  await waitFor("lb-eu healthy", async () => ((await state()).peers[0]?.healthy ? true : undefined));
});
