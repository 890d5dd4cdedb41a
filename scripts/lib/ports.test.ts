import { strict as assert } from "node:assert";
import { once } from "node:events";
import { createServer } from "node:net";
import { test } from "node:test";
import { portIsFree, readPortEnv } from "./ports.mjs";

test("a port setting is a whole number from 1 to its maximum; unset or empty is the default", () => {
  assert.equal(readPortEnv({}, "MERIDIAN_PORT", 3000), 3000);
  assert.equal(readPortEnv({ MERIDIAN_PORT: "" }, "MERIDIAN_PORT", 3000), 3000);
  assert.equal(readPortEnv({ MERIDIAN_PORT: "3961" }, "MERIDIAN_PORT", 3000), 3961);
  assert.equal(readPortEnv({ MERIDIAN_PORT: "65535" }, "MERIDIAN_PORT", 3000), 65535);
  assert.equal(readPortEnv({ MERIDIAN_DEMO_BASE_PORT: "65000" }, "MERIDIAN_DEMO_BASE_PORT", 4100, 65000), 65000);
  for (const bad of ["0", "65536", "-1", "3000.5", "1e3", "abc", "0x10", "30 00", "3000abc"]) {
    assert.throws(
      () => readPortEnv({ MERIDIAN_PORT: bad }, "MERIDIAN_PORT", 3000),
      { message: `MERIDIAN_PORT must be a whole number from 1 to 65535, not ${JSON.stringify(bad)}` },
      bad,
    );
  }
  assert.throws(() => readPortEnv({ MERIDIAN_DEMO_BASE_PORT: "65001" }, "MERIDIAN_DEMO_BASE_PORT", 4100, 65000), /from 1 to 65000, not "65001"/);
});

test("a port something listens on is not free; once it closes, it is", async () => {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  assert.equal(await portIsFree("127.0.0.1", port), false);
  server.close();
  await once(server, "close");
  assert.equal(await portIsFree("127.0.0.1", port), true);
});
