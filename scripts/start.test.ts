// npm start's refusals that must come before it touches anything: a second run on a busy console
// port exits 2 at once, before the install and build steps (a build would rewrite the .next
// directory the first run serves from).
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

test("a busy console port ends npm start with exit 2 before it installs or builds", async () => {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  try {
    // The build marker is made stale on purpose by nothing here: whatever its state, the run must
    // not reach the install or build step.
    const child = spawn(process.execPath, [join(root, "scripts", "start.mjs")], {
      cwd: root,
      env: { ...process.env, MERIDIAN_PORT: String(port), MERIDIAN_DEMO: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 2, output);
    assert.match(output, new RegExp(`port ${port} is in use; set MERIDIAN_PORT`));
    assert.doesNotMatch(output, /installing|building/, output);
  } finally {
    server.close();
  }
});
