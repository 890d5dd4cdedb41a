// A tiny OpenAI-compatible streaming stub for the replay tests (loopback, port 0). It streams a
// role-only chunk first, then content deltas, then a usage chunk when asked for, so the client's
// TTFT-to-first-content, ITL and usage parsing can be checked against known timings. It also
// serves a mutable entrypoint map at GET /map.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after } from "node:test";
import type { TraceRequest } from "../src/trace/types";

export interface StubBehaviour {
  /** Delay between the role chunk and the first content delta. */
  firstContentDelayMs: number;
  /** Gap between content deltas. */
  gapMs: number;
  /** Content deltas to send (capped by max_tokens). */
  deltas: number;
  cachedTokens: number;
  /** Non-2xx status to answer with instead of a stream. */
  failStatus?: number;
  /** Write each SSE event in two fragments split mid-line, with CRLF line ends. */
  fragmented: boolean;
}

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: { model: string; messages: { role: string; content: string }[]; max_tokens: number; stream: boolean; stream_options?: { include_usage?: boolean } };
  at: number;
}

export interface SseStub {
  url: string;
  behaviour: StubBehaviour;
  received: ReceivedRequest[];
  /** Most requests streaming at once. */
  maxActive: number;
  /** What GET /map returns. */
  map: unknown;
  mapHits: number;
  /** While set, GET /map reads `map` and answers only once this settles: a fetch held in flight. */
  mapGate: Promise<void> | null;
  /** Headers of the last GET /map. */
  mapHeaders: IncomingHttpHeaders | undefined;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startSseStub(behaviour: Partial<StubBehaviour> = {}): Promise<SseStub> {
  let active = 0;
  const stub: SseStub = {
    url: "",
    behaviour: { firstContentDelayMs: 0, gapMs: 0, deltas: 3, cachedTokens: 0, fragmented: false, ...behaviour },
    received: [],
    maxActive: 0,
    map: {},
    mapHits: 0,
    mapHeaders: undefined,
    mapGate: null,
    close: async () => {},
  };
  const server: Server = createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/map") {
      stub.mapHits++;
      stub.mapHeaders = req.headers;
      const body = JSON.stringify(stub.map);
      const answer = () => void res.writeHead(200, { "content-type": "application/json" }).end(body);
      if (stub.mapGate) void stub.mapGate.then(answer);
      else answer();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ReceivedRequest["body"];
    stub.received.push({ headers: req.headers, body, at: Date.now() });
    const b = stub.behaviour;
    if (b.failStatus) {
      res.writeHead(b.failStatus, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "stub overloaded", type: "server_error", code: "overloaded" } }));
      return;
    }
    active++;
    stub.maxActive = Math.max(stub.maxActive, active);
    res.writeHead(200, { "content-type": "text/event-stream" });
    const send = (payload: unknown): void => {
      const text = `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}${b.fragmented ? "\r\n\r\n" : "\n\n"}`;
      if (b.fragmented) {
        const cut = Math.floor(text.length / 2);
        res.write(text.slice(0, cut));
        res.write(text.slice(cut));
      } else res.write(text);
    };
    const base = { id: "cmpl-stub", object: "chat.completion.chunk", model: body.model };
    send({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" } }] });
    await sleep(b.firstContentDelayMs);
    const n = Math.min(b.deltas, body.max_tokens);
    for (let i = 0; i < n; i++) {
      if (i > 0) await sleep(b.gapMs);
      send({ ...base, choices: [{ index: 0, delta: { content: `t${i} ` } }] });
    }
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "length" }] });
    if (body.stream_options?.include_usage) {
      const promptChars = body.messages.reduce((s, m) => s + m.content.length, 0);
      send({
        ...base,
        choices: [],
        usage: { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: n, total_tokens: 0, prompt_tokens_details: { cached_tokens: b.cachedTokens } },
      });
    }
    send("[DONE]");
    res.end();
    active--;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return stub;
}

/** Starts stubs for one test file: each is closed when the file's tests end (node:test's `after`). */
export function stubsClosedAfter(): (behaviour?: Partial<StubBehaviour>) => Promise<SseStub> {
  const started: SseStub[] = [];
  after(async () => {
    await Promise.all(started.map((s) => s.close()));
  });
  return async (behaviour) => {
    const s = await startSseStub(behaviour);
    started.push(s);
    return s;
  };
}

/** `count` Mooncake rows due at once, 300 prompt tokens each, sharing their first block. */
export function rowsAtOnce(count: number): TraceRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    index: i,
    timestampMs: 0,
    sourceTimestampMs: 0,
    inputTokens: 300,
    outputTokens: 2,
    hashIds: [0, i],
    blockTokens: 512,
    format: "mooncake",
  }));
}
