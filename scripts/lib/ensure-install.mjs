// ensure-install: installs the workspace's dependencies when they are missing or stale.
// Used by `npm start` and `npm test` so that a fresh clone needs nothing but those commands.
// Prints what it does to stderr; throws if npm fails.
//
// Decisions
// - Current when the stamp (node_modules/.meridian-install-stamp) holds package-lock.json's hash.
//   Without a stamp (someone ran `npm ci` by hand), the tree still counts as current when npm's own
//   record of what it installed (node_modules/.package-lock.json) names the lockfile's versions and
//   every node-gyp addon has its built binary; the stamp is then written. This reads two JSON files:
//   no `npm ls`, no re-install of a tree that is already right.
// - better-sqlite3 builds from source against Node's headers. node-gyp takes the header directory
//   from npm_package_config_node_gyp_nodedir (node-gyp >= 11.4): unlike npm_config_nodedir, which
//   npm 11 warns about as an unknown config, npm passes it through silently. It is set for the
//   install step only, and only when the running Node has headers beside it (/usr/include/node for
//   Debian's nodejs); an explicit npm_config_nodedir or npm_package_config_node_gyp_nodedir wins.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";

const STAMP = ".meridian-install-stamp";

export function ensureInstalled(root) {
  const step = installStep(root);
  if (step === null) return false;
  process.stderr.write(`[meridian] installing dependencies (${step.label}) ...\n`);
  const r = spawnSync(step.command, step.args, { cwd: root, stdio: ["ignore", 2, 2], env: step.env });
  if (r.status !== 0) throw new Error(`${step.label} failed with exit code ${r.status}`);
  step.finish();
  return true;
}

/**
 * The install ensureInstalled would run, for a caller that runs it itself (start.mjs, which must be
 * able to stop it): null when the tree is current (the stamp is then written), else the command and
 * finish(), to call once it exited 0.
 */
export function installStep(root) {
  const lock = join(root, "package-lock.json");
  const stamp = join(root, "node_modules", STAMP);
  const want = existsSync(lock) ? createHash("sha256").update(readFileSync(lock)).digest("hex") : "no-lock";
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === want) return null;
  if (existsSync(lock) && installedTreeMatches(root)) {
    writeFileSync(stamp, want);
    return null;
  }
  const verb = existsSync(lock) ? "ci" : "install";
  return {
    label: `npm ${verb}`,
    command: "npm",
    args: [verb, "--no-audit", "--no-fund"],
    env: installEnv(process.env),
    finish: () => writeFileSync(stamp, want),
  };
}

/** The environment of the install step: the caller's, plus where node-gyp finds Node's headers. */
export function installEnv(env, execPath = process.execPath) {
  if (env.npm_config_nodedir || env.npm_package_config_node_gyp_nodedir) return env;
  const nodedir = nodeHeadersDir(execPath);
  return nodedir ? { ...env, npm_package_config_node_gyp_nodedir: nodedir } : env;
}

/** The installation prefix of the running Node when it ships its headers (<prefix>/include/node). */
export function nodeHeadersDir(execPath = process.execPath) {
  const prefix = dirname(dirname(execPath));
  return existsSync(join(prefix, "include", "node", "node.h")) ? prefix : null;
}

/**
 * Whether node_modules holds what package-lock.json describes: every locked package npm recorded
 * as installed at the locked version, every non-optional one present, and every package with a
 * binding.gyp built (build/Release/*.node), so an `npm ci --ignore-scripts` tree does not pass.
 */
export function installedTreeMatches(root) {
  const hiddenPath = join(root, "node_modules", ".package-lock.json");
  if (!existsSync(hiddenPath)) return false;
  let locked;
  let installed;
  try {
    locked = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")).packages ?? {};
    installed = JSON.parse(readFileSync(hiddenPath, "utf8")).packages ?? {};
  } catch {
    return false;
  }
  for (const [path, entry] of Object.entries(locked)) {
    if (path === "" || !path.includes("node_modules/")) continue; // the root and workspace folders
    const have = installed[path];
    if (!have) {
      // npm leaves out optional packages for other platforms (esbuild's per-OS binaries).
      if (entry.optional || entry.devOptional) continue;
      return false;
    }
    if (have.version !== entry.version || !existsSync(join(root, path))) return false;
    if (existsSync(join(root, path, "binding.gyp")) && !hasBuiltAddon(join(root, path))) return false;
  }
  for (const path of Object.keys(installed)) if (!(path in locked)) return false;
  return true;
}

function hasBuiltAddon(dir) {
  const release = join(dir, "build", "Release");
  return existsSync(release) && readdirSync(release).some((name) => name.endsWith(".node"));
}
