// The meridian-proxy bin: a bad config stops startup with an error naming the field; a good one
// serves on the given port and stops on SIGTERM. Processes are started here and killed by PID.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { loadSettings } from "../src/index";
import { readProxyEnv } from "../src/env";

const bin = fileURLToPath(new URL("../bin/meridian-proxy.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "meridian-proxy-cli-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const goodConfig = {
  schema: "meridian.lb-config/1",
  version: 3,
  lbId: "lb-cli",
  region: "us-ashburn",
  replicas: [{ id: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", model: "m" }],
};

function run(
  args: string[],
  env: Record<string, string> = {},
): { done: Promise<{ code: number | null; stderr: string; stdout: string }>; pid: number | undefined; kill: () => void } {
  const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const done = new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => child.on("exit", (code) => resolve({ code, stderr, stdout })));
  return { done, pid: child.pid, kill: () => child.kill("SIGTERM") };
}

test("a bad config file stops startup with an error naming the field", async () => {
  const path = join(dir, "bad.json");
  writeFileSync(path, JSON.stringify({ ...goodConfig, replicas: [{ ...goodConfig.replicas[0], url: "not a url" }] }));
  const { code, stderr } = await run(["--config", path]).done;
  assert.equal(code, 2);
  assert.match(stderr, /lbConfig\.replicas\[0\]\.url/);
});

test("settings validation names the field (process settings and env)", () => {
  const path = join(dir, "wrapped.json");
  writeFileSync(path, JSON.stringify({ proxy: { port: "eighty" }, lb: goodConfig }));
  assert.throws(() => loadSettings({ env: readProxyEnv({}), configPath: path }), /proxy\.port/);
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_PORT: "-3" }), /MERIDIAN_LB_PORT/);
  writeFileSync(path, JSON.stringify({ proxy: { port: 1234 }, lb: goodConfig }));
  const loaded = loadSettings({ env: readProxyEnv({ MERIDIAN_LB_TOKEN: "t" }), configPath: path, portFlag: 4321 });
  assert.equal(loaded.process.port, 4321);
  assert.equal(loaded.token, "t");
  assert.equal(loaded.lbConfig.version, 3);
  const inline = loadSettings({ env: readProxyEnv({ MERIDIAN_LB_CONFIG_JSON: JSON.stringify(goodConfig), MERIDIAN_LB_PORT: "5555" }) });
  assert.equal(inline.process.port, 5555);
});

test("the bin serves on --port and stops on SIGTERM", async () => {
  const path = join(dir, "good.json");
  writeFileSync(path, JSON.stringify({ proxy: { warmupTimeoutMs: 200 }, lb: goodConfig }));
  // Port 0 is not shown to the caller; pick a free one by binding and releasing it first.
  const { createServer } = await import("node:net");
  const port = await new Promise<number>((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
  const proc = run(["--config", path, "--port", String(port)], { MERIDIAN_LB_TOKEN: "cli-token" });
  try {
    let healthy = false;
    for (let i = 0; i < 100 && !healthy; i++) {
      try {
        const response = await request(`http://127.0.0.1:${port}/health`);
        const body = (await response.body.json()) as { lbId: string; configVersion: number };
        healthy = body.lbId === "lb-cli" && body.configVersion === 3;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    assert.ok(healthy);
  } finally {
    proc.kill();
  }
  const { code } = await proc.done;
  assert.equal(code, 0);
});
