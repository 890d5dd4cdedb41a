// ensure-install: installs the workspace's dependencies when they are missing or stale.
// Used by `npm start` and `npm test` so that a fresh clone needs nothing but those commands.
// "Stale" means package-lock.json changed since the last successful install (a stamp file
// in node_modules records its hash). Prints what it does to stderr; throws if npm fails.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

export function ensureInstalled(root) {
  const lock = join(root, "package-lock.json");
  const stamp = join(root, "node_modules", ".meridian-install-stamp");
  const want = existsSync(lock) ? createHash("sha256").update(readFileSync(lock)).digest("hex") : "no-lock";
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === want) return false;
  const args = existsSync(lock) ? ["ci"] : ["install"];
  process.stderr.write(`[meridian] installing dependencies (npm ${args.join(" ")}) ...\n`);
  // better-sqlite3 builds from source and needs Node's headers; /usr holds them on these machines.
  const env = { ...process.env, npm_config_nodedir: process.env.npm_config_nodedir ?? "/usr" };
  const r = spawnSync("npm", [...args, "--no-audit", "--no-fund"], { cwd: root, stdio: ["ignore", 2, 2], env });
  if (r.status !== 0) throw new Error(`npm ${args[0]} failed with exit code ${r.status}`);
  writeFileSync(stamp, want);
  return true;
}
