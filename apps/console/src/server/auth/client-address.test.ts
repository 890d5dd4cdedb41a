import { strict as assert } from "node:assert";
import { test } from "node:test";
import { forwardedHeader, identifyClient, servedOverHttps } from "./client-address";
import { stampPeer } from "./peer-address";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "./request-security";
import { parseTrustedProxies } from "./trusted-proxies";

const behindProxy: RequestSecurity = { trustedProxies: parseTrustedProxies("10.0.0.5, 10.9.0.0/16"), publicOrigin: null };

function headers(peer: string | null, extra: Record<string, string> = {}): Headers {
  const h = new Headers(extra);
  return peer === null ? h : stampPeer(h, peer);
}

test("trusted proxy lists: addresses, CIDR blocks, loopback; bad entries are named", () => {
  const list = parseTrustedProxies(" 10.0.0.5 , 192.168.0.0/16, loopback, fd00::/8 ");
  for (const address of ["10.0.0.5", "192.168.3.4", "127.0.0.1", "127.8.9.1", "::1", "::ffff:10.0.0.5", "fd00::1"])
    assert.equal(list.has(address), true, address);
  for (const address of ["10.0.0.6", "8.8.8.8", "fe80::1", "not-an-ip", ""]) assert.equal(list.has(address), false, address);
  assert.equal(parseTrustedProxies("").isEmpty, true);
  for (const bad of ["10.0.0.300", "10.0.0.0/33", "example.com", "10.0.0.0/8/1", "::1/129"]) {
    assert.throws(() => parseTrustedProxies(bad), new RegExp(`"${bad.replace(/[./]/g, "\\$&")}" is not an IP address`));
  }
});

test("without trusted proxies the socket peer is the client, whatever the headers say", () => {
  const h = headers("203.0.113.7", { "x-forwarded-for": "1.2.3.4", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" });
  const client = identifyClient(h, DEFAULT_REQUEST_SECURITY);
  assert.deepEqual(client, { address: "203.0.113.7", peer: "203.0.113.7", viaTrustedProxy: false, named: true });
  assert.equal(forwardedHeader(h, client, "x-forwarded-host"), null);
  assert.equal(servedOverHttps(h, client, DEFAULT_REQUEST_SECURITY), false);
  // An IPv4 peer on a dual-stack socket is reported IPv4-mapped; it is the same address.
  assert.equal(identifyClient(headers("::ffff:203.0.113.7"), DEFAULT_REQUEST_SECURITY).address, "203.0.113.7");
});

test("an unstamped or forged peer header is an unknown peer, trusted with nothing", () => {
  assert.deepEqual(identifyClient(headers(null, { "x-forwarded-for": "1.2.3.4" }), behindProxy), {
    address: "unknown",
    peer: null,
    viaTrustedProxy: false,
    named: false,
  });
  const forged = new Headers({ "x-meridian-peer": "0123 10.0.0.5", "x-forwarded-for": "1.2.3.4" });
  assert.equal(identifyClient(forged, behindProxy).address, "unknown");
});

test("behind trusted proxies the client is the nearest X-Forwarded-For hop they do not vouch for", () => {
  // The client wrote "6.6.6.6" itself; the proxies appended what they saw.
  const chain = headers("10.0.0.5", { "x-forwarded-for": "6.6.6.6, 198.51.100.9, 10.9.1.1" });
  assert.deepEqual(identifyClient(chain, behindProxy), { address: "198.51.100.9", peer: "10.0.0.5", viaTrustedProxy: true, named: true });
  assert.equal(identifyClient(headers("10.0.0.5", { "x-forwarded-for": "[2001:db8::1]:443" }), behindProxy).address, "2001:db8::1");
  assert.equal(identifyClient(headers("10.0.0.5", { "x-forwarded-for": "198.51.100.9:5555" }), behindProxy).address, "198.51.100.9");
  // Garbage where an address should be: the last address a trusted proxy vouched for stands.
  assert.equal(identifyClient(headers("10.0.0.5", { "x-forwarded-for": "198.51.100.9, garbage" }), behindProxy).address, "10.0.0.5");
  assert.equal(identifyClient(headers("10.0.0.5"), behindProxy).address, "10.0.0.5", "no header: the proxy itself");
  const client = identifyClient(headers("10.0.0.5", { "x-forwarded-host": "evil.example, console.example.com", "x-forwarded-proto": "https" }), behindProxy);
  assert.equal(
    forwardedHeader(headers("10.0.0.5", { "x-forwarded-host": "evil.example, console.example.com" }), client, "x-forwarded-host"),
    "console.example.com",
  );
  assert.equal(servedOverHttps(headers("10.0.0.5", { "x-forwarded-proto": "https" }), client, behindProxy), true);
  assert.equal(servedOverHttps(headers("10.0.0.5"), client, { ...behindProxy, publicOrigin: "https://console.example.com" }), true);
});
