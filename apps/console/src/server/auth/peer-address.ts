// The TCP peer of a request, which Next's route handlers cannot see: NextRequest has no socket and no
// `ip` since Next 15, and Next copies the client's own X-Forwarded-For through untouched (it only fills
// the header in when it is absent). So the console stamps the peer itself: a subscriber on Node's
// `http.server.request.start` diagnostics channel runs before the server's request listener and
// writes the socket's address into a private header, overwriting whatever the client sent.
//
// The stamp carries a random per-process nonce, so a client cannot forge it even for a request that
// arrives before the subscriber is installed (or in a process where it never was): a header without
// the nonce reads as "peer unknown", and an unknown peer is trusted with nothing.
import "server-only";
import { randomBytes } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

export const PEER_HEADER = "x-meridian-peer";

const STATE = Symbol.for("meridian.console.peer-stamp");
interface StampState {
  nonce: string;
  installed: boolean;
}

/** One nonce per process, shared by every bundle that loads this module (Next loads it several times). */
function state(): StampState {
  const holder = globalThis as { [STATE]?: StampState };
  holder[STATE] ??= { nonce: randomBytes(16).toString("hex"), installed: false };
  return holder[STATE];
}

/** "1.2.3.4" for "::ffff:1.2.3.4": a dual-stack socket reports IPv4 peers in IPv4-mapped form. */
export function normaliseAddress(address: string): string {
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed);
  return mapped ? mapped[1]! : trimmed.toLowerCase();
}

function stampValue(address: string): string {
  return `${state().nonce} ${normaliseAddress(address)}`;
}

/** Installs the stamp for every HTTP server of this process. Idempotent. Called from instrumentation.ts. */
export function installPeerAddressStamp(): void {
  const s = state();
  if (s.installed) return;
  s.installed = true;
  subscribe("http.server.request.start", (message) => {
    const { request, socket } = message as { request: IncomingMessage; socket: Socket };
    request.headers[PEER_HEADER] = socket.remoteAddress ? stampValue(socket.remoteAddress) : "";
  });
}

/** The request's TCP peer as stamped by the subscriber, or null when it is not known. */
export function peerAddress(headers: Headers): string | null {
  const value = headers.get(PEER_HEADER);
  if (!value) return null;
  const space = value.indexOf(" ");
  if (space < 0 || value.slice(0, space) !== state().nonce) return null;
  return value.slice(space + 1) || null;
}

/** Sets the stamp as the subscriber would; for tests that build fetch Requests without a socket. */
export function stampPeer(headers: Headers, address: string): Headers {
  headers.set(PEER_HEADER, stampValue(address));
  return headers;
}
