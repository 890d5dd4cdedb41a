// A fake SGLang-ish engine that records what reaches it: /health and /metrics idle, every POST
// recorded (headers and body) and answered by the test's handler. Loopback, port 0; closed by handle.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export async function startRecordingEngine(answer: (seen: Seen, res: ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const one = { url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      seen.push(one);
      answer(one, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    id: "e1",
    region: "us-ashburn" as const,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
