import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const runner = fileURLToPath(new URL("./node-tests.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "meridian-node-tests-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("files that leave a handle open end with their tests, and the TAP file is complete", () => {
  writeFileSync(
    join(dir, "leaks.test.mjs"),
    `import { test } from "node:test";
    import { createServer } from "node:net";
    test("starts a server and forgets to close it", async () => { await new Promise((r) => createServer().listen(0, "127.0.0.1", r)); });`,
  );
  writeFileSync(join(dir, "fails.test.mjs"), `import { test } from "node:test"; test("fails", () => { throw new Error("boom"); });`);
  const tap = join(dir, "out.tap");
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // as in npm test, which is no test file
  const r = spawnSync(
    process.execPath,
    ["--test-concurrency=2", "--test-timeout=60000", runner, tap, join(dir, "leaks.test.mjs"), join(dir, "fails.test.mjs")],
    {
      env,
      encoding: "utf8",
      // Without --test-force-exit in the files' processes this would wait for the server forever.
      timeout: 60_000,
    },
  );
  assert.equal(r.signal, null, "ended on its own");
  assert.equal(r.status, 1, "a test failed");
  assert.match(r.stdout, /✔ starts a server and forgets to close it/);
  assert.match(r.stdout, /✖ fails/);
  const text = readFileSync(tap, "utf8");
  assert.match(text, /^# pass 1$/m);
  assert.match(text, /^# fail 1$/m);
  assert.match(text.trimEnd().split("\n").at(-1)!, /^# duration_ms /, "the TAP file ends with node:test's last summary line");
});

test("without files it says how to run it", () => {
  const r = spawnSync(process.execPath, [runner], { encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^usage: /);
});
