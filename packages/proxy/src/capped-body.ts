// Reads the body of a scrape or a peer poll up to a bound. Both are parsed synchronously on the LB's one
// event loop, so their size is time every client waits: an engine's /metrics of 24 MiB stalled the LB
// 3 s per scrape, and a peer's report of 27 MiB 2 s per poll. Past the bound the body is dropped unread
// and the scrape or poll fails, naming the size.
import type { Dispatcher } from "undici";

export async function readCapped(body: Dispatcher.ResponseData["body"], maxBytes: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    bytes += buffer.length;
    if (bytes > maxBytes) {
      body.destroy();
      throw new Error(`${what} over ${maxBytes} bytes: not read`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
