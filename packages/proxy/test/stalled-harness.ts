// What the stalled-request tests share (stalled-request.test.ts: replicas; stalled-forward.test.ts:
// peer LBs): an LB whose log lines the test reads, the limits they run under, the two log lines that
// say a request waits or moves, and scripted peers. Not a test file.
import { strict as assert } from "node:assert";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after } from "node:test";
import { pino } from "pino";
import type { LbConfigInput } from "@meridian/protocol";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import type { RunningProxy } from "../src/index";
import { listenLoopback, type PostResult, servedBy, startLb, waitFor } from "./helpers";
import type { ScriptedEngine } from "./scripted-engine";

/** What a test file opened, closed after its tests (in reverse). */
export function closedAfterTests(): { close(): Promise<void> }[] {
  const open: { close(): Promise<void> }[] = [];
  after(async () => {
    for (const thing of open.reverse()) await thing.close();
  });
  return open;
}

// Scrapes only when a test asks (scrapeNow): a replica set full stays full until then.
export const LIMITS = {
  probes: { rttIntervalMs: 200, scrapeIntervalMs: 600_000, unhealthyAfter: 60 },
  limits: { firstByteMinMs: 200, headersTimeoutMs: 120_000 },
};
export const WAITS = "first-byte deadline passed; no other target can take it yet, so it waits";
export const MOVED = "no first byte within the deadline; re-dispatching";

export interface Logged {
  msg: string;
  target?: string;
}

/** An LB on `config` whose log lines land in `logs`, closed with `open`, once every replica was probed. */
export async function observedLb(config: LbConfigInput, open: { close(): Promise<void> }[]): Promise<{ lb: RunningProxy; logs: Logged[] }> {
  const logs: Logged[] = [];
  const lb = await startLb(config, { logger: pino({ level: "info" }, { write: (line: string) => void logs.push(JSON.parse(line) as Logged) }) });
  open.push(lb);
  await waitFor("every replica probed", () => [...lb.balancer.core.replicas.values()].every((r) => r.probed));
  return { lb, logs };
}

export const region = "us-ashburn" as const;

/** The request of `session` reaches `engine`, which answers it: its client gets a 200 from `replicaId`. */
export async function answeredBy(engine: ScriptedEngine, session: string, reply: Promise<PostResult>, replicaId: string): Promise<void> {
  await waitFor(`the request of ${session} on ${engine.id}`, () => engine.holds(session));
  engine.finish(session);
  const result = await reply;
  assert.equal(result.status, 200, result.text);
  assert.equal(servedBy(result), replicaId);
}

/** A peer LB with `available` replicas, less those the forwards it holds take (or failing its polls
 * once `answersPolls` is false; its region requiring client keys once `clientKeysRequired`); it
 * counts the forwards it gets and holds them. */
export async function reportingPeer(lbId = "lb-eu", peerRegion = "eu-frankfurt") {
  const state = { available: 0, reports: 0, answersPolls: true, clientKeysRequired: false, forwards: [] as { req: IncomingMessage; res: ServerResponse }[] };
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/admin/peer")) {
      if (!state.answersPolls) {
        res.statusCode = 503;
        res.end();
        return;
      }
      state.reports++;
      res.writeHead(200, { "content-type": "application/json" });
      const report = {
        lbId,
        region: peerRegion,
        time: Date.now(),
        configVersion: 1,
        replicas: [],
        queueLength: 0,
        clientKeysRequired: state.clientKeysRequired,
      };
      // As a real peer does: a forward it holds takes one of its free replicas.
      res.end(JSON.stringify({ schema: "meridian.peer-report/1", ...report, availableReplicas: Math.max(0, state.available - state.forwards.length) }));
      return;
    }
    req.resume();
    req.on("end", () => state.forwards.push({ req, res }));
  });
  return { state, ...(await listenLoopback(server)) };
}

/** Answers a request the test's fake engine or peer holds with a minimal completion. */
export function answer(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: "x",
      object: "chat.completion",
      created: 0,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    }),
  );
}

/** Two client keys, and the config's clientAuth admitting both or, once `revoked`, only the second:
 * a push that revokes (where keys are `required`) or drops the first, `leaving`. */
export function clientKeysLosingOne(required: boolean) {
  const leaving = generateClientKey("0123456789ab");
  const staying = generateClientKey("ba9876543210");
  const entry = (id: string, key: string, name: string) => ({ id, name, region, sha256: sha256Hex(key) });
  const both = [entry("0123456789ab", leaving, "leaver"), entry("ba9876543210", staying, "stayer")];
  return { leaving, clientAuth: (revoked: boolean) => ({ required, keys: revoked ? both.slice(1) : both }) };
}
