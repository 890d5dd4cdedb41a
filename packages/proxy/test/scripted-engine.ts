// A fake engine whose every answer is scripted, for the LB scenario tests: GET /health answers after
// a scripted delay (the probe RTT), GET /metrics reports a scripted SGLang load, and each chat
// completion is held until the script finishes it by its x-session-id, then answered with a fixed
// reply and usage. Loopback, port 0; closed by handle.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { chatSerialisedLength, type ChatMessageLike } from "@meridian/routing";
import { SCENARIO_REPLY } from "@meridian/lb-core/testing";

export interface ScriptedEngine {
  id: string;
  url: string;
  setLoad(running: number, waiting: number): void;
  /** Whether a request of this session is waiting for finish(). */
  holds(session: string): boolean;
  /** Answers the held request of this session. */
  finish(session: string): void;
  close(): Promise<void>;
}

const CHARS_PER_TOKEN = 4;

export async function startScriptedEngine(id: string, rttMs: number): Promise<ScriptedEngine> {
  let load = { running: 0, waiting: 0 };
  const held = new Map<string, { res: ServerResponse; promptTokens: number }>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/health") {
        // The scripted latency of this replica as its LBs' probes measure it.
        setTimeout(() => res.end('{"status":"ok"}'), rttMs);
        return;
      }
      if (req.method === "GET" && req.url === "/metrics") {
        res.setHeader("content-type", "text/plain; version=0.0.4");
        res.end(
          [
            "# TYPE sglang:num_running_reqs gauge",
            `sglang:num_running_reqs{model_name="scripted"} ${load.running}`,
            "# TYPE sglang:num_queue_reqs gauge",
            `sglang:num_queue_reqs{model_name="scripted"} ${load.waiting}`,
            "# TYPE sglang:num_used_tokens gauge",
            'sglang:num_used_tokens{model_name="scripted"} 0',
            "",
          ].join("\n"),
        );
        return;
      }
      if (req.method === "POST" && req.url === "/v1/chat/completions") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messages: ChatMessageLike[] };
        const session = String(req.headers["x-session-id"] ?? "");
        held.set(session, { res, promptTokens: Math.ceil(chatSerialisedLength(body.messages) / CHARS_PER_TOKEN) });
        return;
      }
      res.statusCode = 404;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    id,
    url: `http://127.0.0.1:${port}`,
    setLoad(running, waiting) {
      load = { running, waiting };
    },
    holds: (session) => held.has(session),
    finish(session) {
      const request = held.get(session);
      if (!request) throw new Error(`engine ${id} holds no request of session ${session}`);
      held.delete(session);
      const completionTokens = 2;
      request.res.setHeader("content-type", "application/json");
      request.res.end(
        JSON.stringify({
          id: `chatcmpl-${session}`,
          object: "chat.completion",
          created: 0,
          model: "scripted",
          choices: [{ index: 0, message: { role: "assistant", content: SCENARIO_REPLY }, finish_reason: "stop" }],
          usage: {
            prompt_tokens: request.promptTokens,
            completion_tokens: completionTokens,
            total_tokens: request.promptTokens + completionTokens,
            prompt_tokens_details: { cached_tokens: 0 },
          },
        }),
      );
    },
    async close() {
      for (const { res } of held.values()) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
