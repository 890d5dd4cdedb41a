// PUT /admin/config persists a config only once the LB applied it: a config the schema accepts but
// the LB cannot run is refused with 400 and never saved, so a restart cannot trip over it. The
// balancer here is a stand-in whose applyConfig fails the way LbCore's does (test/admin.test.ts
// pushes configs to a real LB).
import { strict as assert } from "node:assert";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, mock, test } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { request } from "undici";
import { parseLbConfig, type LbConfig } from "@meridian/protocol";
import { generateLbToken } from "@meridian/protocol/credentials";
import { RoutingInputError } from "@meridian/routing";
import { type AdminDeps, handleAdmin } from "./admin";
import { AuthRefusals } from "./auth-refusals";
import type { Balancer } from "./balancer";
import { ConfigStore } from "./config-store";
import { HttpError, sendError } from "./errors";
import { LbCredentials } from "./lb-credentials";

const token = generateLbToken();
const dir = mkdtempSync(join(tmpdir(), "meridian-admin-"));
const running = parseLbConfig({ schema: "meridian.lb-config/2", version: 1, lbId: "lb-us", region: "us" });
const logger = pino({ level: "silent" });

/** What the stand-in balancer does with a config: run it, or throw like a core that cannot. */
let applyOutcome: "ok" | "cannot-run" | "bug" = "ok";
const balancer = {
  config: running,
  applyConfig(next: LbConfig): Promise<void> {
    if (applyOutcome === "cannot-run") throw new RoutingInputError("capacityBlocks", "must be a positive integer <= 2147483647 (2^31 - 1), got 2147483648");
    if (applyOutcome === "bug") throw new Error("a bug in the balancer");
    balancer.config = next;
    return Promise.resolve();
  },
};
const store = new ConfigStore(join(dir, "config.json"));
const applied: number[] = [];
const deps: AdminDeps = {
  balancer: balancer as unknown as Balancer,
  store,
  credentials: LbCredentials.load({ file: null, bootstrapToken: token, now: 0 }).credentials,
  refusals: new AuthRefusals(new Registry(), logger),
  heartbeatMs: 1_000,
  logger,
  onConfigApplied: (config) => applied.push(config.version),
};

let server: Server;
let url: string;
before(async () => {
  server = createServer((req, res) => {
    handleAdmin(req, res, new URL(req.url ?? "/", "http://lb"), deps).catch((error: unknown) =>
      sendError(res, error instanceof HttpError ? error : new HttpError(500, "internal error", "server_error", "internal_error")),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

interface PutAnswer {
  status: number;
  error?: { message: string; code: string };
  version?: number;
  unchanged?: boolean;
}

async function putConfig(config: LbConfig): Promise<PutAnswer> {
  const response = await request(`${url}/admin/config`, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(config),
  });
  const body = (await response.body.json()) as Omit<PutAnswer, "status">;
  return { status: response.statusCode, ...body };
}

test("a config the LB cannot run is refused with 400 invalid_config and is not saved", async () => {
  applyOutcome = "cannot-run";
  const refused = await putConfig({ ...running, version: 2 });
  assert.equal(refused.status, 400);
  assert.equal(refused.error?.code, "invalid_config");
  assert.match(refused.error?.message ?? "", /^this LB cannot run the config: capacityBlocks: must be a positive integer <= 2147483647/);
  assert.equal(store.load(), null, "nothing persisted: a restart starts from the config it had");
  assert.equal(balancer.config.version, 1);
  assert.deepEqual(applied, []);

  applyOutcome = "bug";
  assert.equal((await putConfig({ ...running, version: 2 })).status, 500, "a failure that is not the config's is a server error");
  assert.equal(store.load(), null);

  applyOutcome = "ok";
  assert.equal((await putConfig({ ...running, version: 2 })).status, 200);
  assert.equal(store.load()?.version, 2, "a config that applied is persisted");
  assert.deepEqual(applied, [2]);
});

test("a millisecond limit or probe interval above 2^31 - 1 is refused with 400 invalid_config, naming it", async () => {
  // Node timers fire a longer delay after 1 ms: every client body would time out at once, probes would flood.
  for (const [group, name] of [
    ["limits", "clientBodyTimeoutMs"],
    ["probes", "rttIntervalMs"],
  ] as const) {
    const over = { ...balancer.config, version: balancer.config.version + 1, [group]: { ...balancer.config[group], [name]: 2 ** 31 } };
    const refused = await putConfig(over as LbConfig);
    assert.equal(refused.status, 400);
    assert.equal(refused.error?.code, "invalid_config");
    assert.match(refused.error?.message ?? "", new RegExp(`lbConfig\\.${group}\\.${name}: must be at most 2147483647 ms .*Node timers`));
  }
  assert.equal(balancer.config.version, 2, "the LB keeps the config it runs");
});

test("a pushed config whose save fails answers 500; pushing it again saves it once the disk recovers", async () => {
  applyOutcome = "ok";
  applied.length = 0;
  const next = { ...running, version: 3, policy: "round-robin" as const };
  const save = mock.method(store, "save", () => {
    throw new Error("ENOSPC: no space left on device");
  });
  try {
    const failed = await putConfig(next);
    assert.equal(failed.status, 500);
    assert.equal(failed.error?.code, "config_not_saved");
    assert.match(failed.error?.message ?? "", /^config version 3 is running but could not be saved \(ENOSPC: no space left on device\); push it again/);
    // It runs (applying cannot be undone without disturbing the replicas), and what follows the running config followed it.
    assert.equal(balancer.config.version, 3);
    assert.deepEqual(applied, [3]);
    assert.equal(store.load()?.version, 2, "still the old config on disk");

    // The console retries while the disk is still full: still not saved, so still 500 (not "unchanged").
    const again = await putConfig(next);
    assert.equal(again.status, 500);
    assert.equal(again.error?.code, "config_not_saved");
    assert.equal(save.mock.callCount(), 2);
  } finally {
    save.mock.restore();
  }

  // The disk recovered: the same push saves it.
  const saved = await putConfig(next);
  assert.equal(saved.status, 200);
  assert.equal(saved.unchanged, undefined, "the retry changed what is on disk");
  assert.equal(store.load()?.version, 3, "a restart keeps the config that runs");
  assert.deepEqual(applied, [3], "applied once");

  // Saved now: a further identical push is the ordinary no-op.
  const unchanged = await putConfig(next);
  assert.equal(unchanged.status, 200);
  assert.equal(unchanged.unchanged, true);
});
