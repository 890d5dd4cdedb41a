// Who may read the console's /metrics: a scraper with the metrics bearer token (MERIDIAN_METRICS_TOKEN),
// or any client on the console's own host. "On this host" is the client's true address
// (client-address.ts: the socket's peer, or behind a trusted proxy the first untrusted hop), never a
// header the client wrote, so a remote client cannot claim to be 127.0.0.1; and a request relayed by
// a trusted reverse proxy on this host counts as the remote client it carries, not as loopback.
// A loopback client must also address the console by one of its names (host-check.ts): a web page
// whose name was rebound to 127.0.0.1 runs in a browser on this host, too.
// Refusals are 401, audited like any other (refusal.ts).
import "server-only";
import { BlockList, isIP } from "node:net";
import { bearerOf, digestsEqual, sha256 } from "@meridian/protocol/credentials";
import { identifyClient } from "./client-address";
import { checkHost } from "./host-check";
import { type RefusalSink, refuse } from "./refusal";
import type { RequestSecurity } from "./request-security";
import type { SecurityAuditor } from "./security-audit";

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

function isLoopback(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** null when the request may read the metrics; otherwise the 401 to answer. */
export async function requireMetricsAccess(
  sink: RefusalSink,
  req: Request,
  options: { token: string | undefined; security: RequestSecurity; auditor?: SecurityAuditor },
): Promise<Response | null> {
  const bearer = bearerOf(req.headers.get("authorization"));
  if (options.token !== undefined && bearer !== null && digestsEqual(sha256(bearer), sha256(options.token))) return null;
  const client = identifyClient(req.headers, options.security);
  // A trusted proxy that named no client (nginx without an X-Forwarded-For line, or a hop that is not
  // an address) leaves the proxy's own address: on this host that is loopback for every remote
  // client it relays, so it does not count. Such a setup reads the metrics with the token.
  const local = isLoopback(client.address) && client.named;
  const addressed = checkHost(req.headers, client, options.security);
  if (local && addressed.ok) return null;
  const reason = req.headers.has("authorization")
    ? "wrong metrics token"
    : !addressed.ok
      ? `no metrics token, and ${addressed.reason}`
      : "not loopback and no metrics token";
  const event = { action: "auth.denied", actor: "anonymous", target: "api:/metrics", address: client.address, status: 401, reason } as const;
  return await refuse(sink, event, "the metrics are readable from the console's host or with MERIDIAN_METRICS_TOKEN", { auditor: options.auditor });
}
