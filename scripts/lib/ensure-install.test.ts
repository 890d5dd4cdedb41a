import { strict as assert } from "node:assert";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { installedTreeMatches, installEnv, installStep, nodeHeadersDir } from "./ensure-install.mjs";

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

type Packages = Record<string, { version?: string; optional?: boolean }>;

/** A checkout with a lockfile and an installed tree as npm would leave it. */
function checkout(locked: Packages, installed: Packages | null, files: string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), "meridian-install-"));
  dirs.push(root);
  writeFileSync(join(root, "package-lock.json"), JSON.stringify({ lockfileVersion: 3, packages: { "": { name: "x" }, ...locked } }));
  mkdirSync(join(root, "node_modules"), { recursive: true });
  if (installed) writeFileSync(join(root, "node_modules", ".package-lock.json"), JSON.stringify({ lockfileVersion: 3, packages: installed }));
  for (const path of Object.keys(installed ?? {})) mkdirSync(join(root, path), { recursive: true });
  for (const file of files) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), "");
  }
  return root;
}

describe("installedTreeMatches", () => {
  const locked: Packages = {
    "node_modules/a": { version: "1.0.0" },
    "node_modules/@esbuild/darwin-arm64": { version: "0.25.0", optional: true },
    "packages/routing": { version: "0.1.0" },
  };

  test("a tree npm installed from this lockfile counts as current (skipped platform packages allowed)", () => {
    assert.equal(installedTreeMatches(checkout(locked, { "node_modules/a": { version: "1.0.0" } })), true);
  });

  test("no npm record, a different version, a missing package or an extra one means re-install", () => {
    assert.equal(installedTreeMatches(checkout(locked, null)), false);
    assert.equal(installedTreeMatches(checkout(locked, { "node_modules/a": { version: "0.9.0" } })), false);
    assert.equal(installedTreeMatches(checkout({ ...locked, "node_modules/b": { version: "2.0.0" } }, { "node_modules/a": { version: "1.0.0" } })), false);
    assert.equal(installedTreeMatches(checkout(locked, { "node_modules/a": { version: "1.0.0" }, "node_modules/stale": { version: "3.0.0" } })), false);
  });

  test("a native addon without its built binary (npm ci --ignore-scripts) is not installed", () => {
    const addon: Packages = { "node_modules/better-sqlite3": { version: "12.0.0" } };
    assert.equal(installedTreeMatches(checkout(addon, addon, ["node_modules/better-sqlite3/binding.gyp"])), false);
    const built = ["node_modules/better-sqlite3/binding.gyp", "node_modules/better-sqlite3/build/Release/better_sqlite3.node"];
    assert.equal(installedTreeMatches(checkout(addon, addon, built)), true);
  });

  test("a corrupt record is not trusted", () => {
    const root = checkout(locked, { "node_modules/a": { version: "1.0.0" } });
    writeFileSync(join(root, "node_modules", ".package-lock.json"), "{ not json");
    assert.equal(installedTreeMatches(root), false);
  });
});

describe("installEnv", () => {
  test("points node-gyp at the running Node's headers without an npm config npm would warn about", () => {
    const env = installEnv({ PATH: "/bin" });
    const headers = nodeHeadersDir();
    assert.equal(env.npm_config_nodedir, undefined);
    assert.equal(env.npm_package_config_node_gyp_nodedir, headers ?? undefined);
  });

  test("an explicit nodedir wins", () => {
    assert.equal(installEnv({ npm_config_nodedir: "/opt/node" }).npm_package_config_node_gyp_nodedir, undefined);
    assert.equal(installEnv({ npm_package_config_node_gyp_nodedir: "/opt/node" }).npm_package_config_node_gyp_nodedir, "/opt/node");
  });

  test("no headers beside the binary: nothing is set", () => {
    const env = installEnv({}, "/nonexistent/bin/node");
    assert.equal(env.npm_package_config_node_gyp_nodedir, undefined);
  });
});

describe("installStep (what npm start runs itself, so that it can stop it)", () => {
  const locked: Packages = { "node_modules/a": { version: "1.0.0" } };

  test("a current tree needs no step, and gets its stamp", () => {
    const root = checkout(locked, locked);
    assert.equal(installStep(root), null);
    assert.equal(existsSync(join(root, "node_modules", ".meridian-install-stamp")), true);
  });

  test("a stale tree gets `npm ci`; finish() after it succeeded makes the tree current", () => {
    const root = checkout(locked, null);
    const step = installStep(root);
    assert.ok(step);
    assert.equal(step.label, "npm ci");
    assert.deepEqual([step.command, ...step.args], ["npm", "ci", "--no-audit", "--no-fund"]);
    assert.equal(installStep(root)?.label, "npm ci", "not current until finish()");
    step.finish();
    assert.equal(installStep(root), null);
  });
});
