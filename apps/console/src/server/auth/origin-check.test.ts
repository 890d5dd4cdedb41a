import { strict as assert } from "node:assert";
import { test } from "node:test";
import { identifyClient } from "./client-address";
import { checkOrigin } from "./origin-check";
import { stampPeer } from "./peer-address";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "./request-security";
import { parseTrustedProxies } from "./trusted-proxies";

function verdict(peer: string, extra: Record<string, string>, security: RequestSecurity = DEFAULT_REQUEST_SECURITY, allowNonBrowser = false) {
  const headers = stampPeer(new Headers({ host: "console.internal:3000", ...extra }), peer);
  return checkOrigin(headers, identifyClient(headers, security), security, { allowNonBrowser });
}

test("Origin must name the Host the request was sent to", () => {
  assert.deepEqual(verdict("203.0.113.7", { origin: "http://console.internal:3000" }), { ok: true });
  assert.equal(verdict("203.0.113.7", { origin: "http://evil.example" }).ok, false);
  assert.equal(verdict("203.0.113.7", { origin: "http://console.internal:3001" }).ok, false);
  assert.equal(verdict("203.0.113.7", { origin: "null" }).ok, false);
  assert.equal(verdict("203.0.113.7", { origin: "not a url" }).ok, false);
  assert.deepEqual(verdict("203.0.113.7", {}), { ok: false, reason: "the Origin header is missing" });
});

test("a forged X-Forwarded-Host from an untrusted peer is ignored", () => {
  const forged = verdict("203.0.113.7", { origin: "http://evil.example", "x-forwarded-host": "evil.example" });
  assert.deepEqual(forged, { ok: false, reason: "Origin http://evil.example does not match the console's host console.internal:3000" });
});

test("from a trusted proxy, X-Forwarded-Host names the console", () => {
  const security: RequestSecurity = { trustedProxies: parseTrustedProxies("10.0.0.5"), publicOrigin: null };
  assert.deepEqual(verdict("10.0.0.5", { origin: "https://console.example.com", "x-forwarded-host": "console.example.com" }, security), { ok: true });
  assert.equal(verdict("10.0.0.5", { origin: "https://evil.example", "x-forwarded-host": "console.example.com" }, security).ok, false);
  // The same headers from any other peer prove nothing.
  assert.equal(verdict("10.0.0.6", { origin: "https://console.example.com", "x-forwarded-host": "console.example.com" }, security).ok, false);
});

test("with MERIDIAN_PUBLIC_URL, only that exact origin passes, whatever Host or X-Forwarded-Host say", () => {
  const security: RequestSecurity = { trustedProxies: parseTrustedProxies("10.0.0.5"), publicOrigin: "https://console.example.com" };
  assert.deepEqual(verdict("10.0.0.5", { origin: "https://console.example.com" }, security), { ok: true });
  assert.equal(verdict("10.0.0.5", { origin: "http://console.example.com" }, security).ok, false, "scheme counts");
  assert.equal(verdict("10.0.0.5", { origin: "https://evil.example", "x-forwarded-host": "evil.example", host: "evil.example" }, security).ok, false);
});

test("login accepts a script (no Origin, no Sec-Fetch-Site) but not a browser's cross-site request", () => {
  assert.deepEqual(verdict("203.0.113.7", {}, DEFAULT_REQUEST_SECURITY, true), { ok: true });
  assert.deepEqual(verdict("203.0.113.7", { "sec-fetch-site": "same-origin" }, DEFAULT_REQUEST_SECURITY, true), { ok: true });
  assert.equal(verdict("203.0.113.7", { "sec-fetch-site": "cross-site" }, DEFAULT_REQUEST_SECURITY, true).ok, false);
  assert.equal(verdict("203.0.113.7", { origin: "http://evil.example" }, DEFAULT_REQUEST_SECURITY, true).ok, false);
  // `Origin: null` is a browser's (a sandboxed frame, a data: document): no script sends it.
  assert.equal(verdict("203.0.113.7", { origin: "null" }, DEFAULT_REQUEST_SECURITY, true).ok, false);
  assert.equal(verdict("203.0.113.7", { origin: "null" }, { ...DEFAULT_REQUEST_SECURITY, publicOrigin: "https://console.example" }, true).ok, false);
});
