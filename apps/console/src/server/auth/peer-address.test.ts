import { strict as assert } from "node:assert";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { installPeerAddressStamp, PEER_HEADER, peerAddress } from "./peer-address";

test("a live HTTP server stamps the socket's address over whatever the client sent", async () => {
  installPeerAddressStamp();
  installPeerAddressStamp(); // idempotent: one subscriber
  let seen: IncomingHttpHeaders = {};
  const server = createServer((req, res) => {
    seen = req.headers;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/`, { headers: { [PEER_HEADER]: "guess 6.6.6.6", "x-forwarded-for": "6.6.6.6" } });
    const headers = new Headers(seen as Record<string, string>);
    assert.equal(peerAddress(headers), "127.0.0.1");
    assert.equal(headers.get("x-forwarded-for"), "6.6.6.6", "the client's own header is left for the trusted-proxy logic to judge");
  } finally {
    server.close();
  }
});
