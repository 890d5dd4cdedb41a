import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { autoFailbackAfterMs, parseConsoleEnv } from "./env";

const BASE = {};

test("MERIDIAN_TRUSTED_PROXIES: empty trusts no proxy; addresses, blocks and loopback parse; a bad entry is named", () => {
  assert.equal(parseConsoleEnv(BASE).MERIDIAN_TRUSTED_PROXIES.isEmpty, true);
  const proxies = parseConsoleEnv({ ...BASE, MERIDIAN_TRUSTED_PROXIES: "10.0.0.5, 172.16.0.0/12, loopback" }).MERIDIAN_TRUSTED_PROXIES;
  assert.deepEqual([proxies.has("10.0.0.5"), proxies.has("172.20.1.1"), proxies.has("::1"), proxies.has("10.0.0.6")], [true, true, true, false]);
  assert.throws(
    () => parseConsoleEnv({ ...BASE, MERIDIAN_TRUSTED_PROXIES: "10.0.0.5, proxy.internal" }),
    /invalid console environment: MERIDIAN_TRUSTED_PROXIES: "proxy\.internal" is not an IP address, a CIDR block \(10\.0\.0\.0\/8\) or "loopback"/,
  );
});

test("MERIDIAN_PUBLIC_URL: reduced to its origin; only http and https", () => {
  assert.equal(parseConsoleEnv(BASE).MERIDIAN_PUBLIC_URL, undefined);
  assert.equal(parseConsoleEnv({ ...BASE, MERIDIAN_PUBLIC_URL: "https://Console.Example.com/meridian/" }).MERIDIAN_PUBLIC_URL, "https://console.example.com");
  assert.equal(parseConsoleEnv({ ...BASE, MERIDIAN_PUBLIC_URL: "http://10.0.0.9:3000" }).MERIDIAN_PUBLIC_URL, "http://10.0.0.9:3000");
  for (const bad of ["console.example.com", "ftp://console.example.com"]) {
    assert.throws(() => parseConsoleEnv({ ...BASE, MERIDIAN_PUBLIC_URL: bad }), /MERIDIAN_PUBLIC_URL must be an http or https URL/);
  }
});

test("MERIDIAN_AUTO_FAILBACK_AFTER_S: 30 s in the demo and off otherwise unless set; not negative", () => {
  assert.equal(autoFailbackAfterMs(parseConsoleEnv(BASE)), 0);
  assert.equal(autoFailbackAfterMs(parseConsoleEnv({ ...BASE, MERIDIAN_DEMO: "1" })), 30_000);
  assert.equal(autoFailbackAfterMs(parseConsoleEnv({ ...BASE, MERIDIAN_DEMO: "1", MERIDIAN_AUTO_FAILBACK_AFTER_S: "0" })), 0);
  assert.equal(autoFailbackAfterMs(parseConsoleEnv({ ...BASE, MERIDIAN_AUTO_FAILBACK_AFTER_S: "5" })), 5_000);
  assert.throws(() => parseConsoleEnv({ ...BASE, MERIDIAN_AUTO_FAILBACK_AFTER_S: "-1" }), /MERIDIAN_AUTO_FAILBACK_AFTER_S/);
});

test("DATABASE_URL: a postgres:// or postgresql:// URL selects PostgreSQL; empty means SQLite; anything else is refused clearly", () => {
  assert.equal(parseConsoleEnv({ ...BASE, DATABASE_URL: "postgres://meridian@db/meridian" }).DATABASE_URL, "postgres://meridian@db/meridian");
  assert.equal(parseConsoleEnv({ ...BASE, DATABASE_URL: "postgresql://meridian@db/meridian" }).DATABASE_URL, "postgresql://meridian@db/meridian");
  assert.equal(parseConsoleEnv({ ...BASE, DATABASE_URL: "" }).DATABASE_URL, undefined);
  assert.equal(parseConsoleEnv({ ...BASE, DATABASE_URL: "  " }).DATABASE_URL, undefined);
  assert.throws(() => parseConsoleEnv({ ...BASE, DATABASE_URL: "mysql://db/meridian" }), /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/);
});

test("MERIDIAN_ENTRYPOINTS_TOKEN: optional; only its SHA-256 is kept; too short is refused", () => {
  assert.equal(parseConsoleEnv(BASE).MERIDIAN_ENTRYPOINTS_TOKEN, undefined);
  const parsed = parseConsoleEnv({ MERIDIAN_ENTRYPOINTS_TOKEN: "replay-clients-token" });
  assert.equal(parsed.MERIDIAN_ENTRYPOINTS_TOKEN, createHash("sha256").update("replay-clients-token").digest("hex"));
  assert.ok(!JSON.stringify(parsed).includes("replay-clients-token"));
  assert.throws(() => parseConsoleEnv({ MERIDIAN_ENTRYPOINTS_TOKEN: "short" }), /MERIDIAN_ENTRYPOINTS_TOKEN must be at least 16 characters/);
});

test("an empty variable is an unset one: its default holds (NAME= in an env file)", () => {
  const unset = parseConsoleEnv({ ...BASE });
  const empty = parseConsoleEnv({ ...BASE, MERIDIAN_AUTO_FAILOVER: "", MERIDIAN_LB_TOKEN_GRACE_S: "", MERIDIAN_AUTO_FAILBACK_AFTER_S: " ", MERIDIAN_PORT: "" });
  assert.equal(empty.MERIDIAN_AUTO_FAILOVER, true);
  assert.equal(empty.MERIDIAN_LB_TOKEN_GRACE_S, unset.MERIDIAN_LB_TOKEN_GRACE_S);
  assert.equal(empty.MERIDIAN_LB_TOKEN_GRACE_S, 60);
  assert.equal(empty.MERIDIAN_AUTO_FAILBACK_AFTER_S, undefined);
  assert.equal(empty.MERIDIAN_PORT, 3000);
  assert.throws(() => parseConsoleEnv({ ...BASE, MERIDIAN_AUTO_FAILOVER: "maybe" }), /MERIDIAN_AUTO_FAILOVER/);
});
