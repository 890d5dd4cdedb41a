// build-marker: whether the console's build is complete and newer than its sources, for `npm start`.
// Not a CLI; imported by scripts/start.mjs (plain ESM, before any dependency is installed). Prints
// nothing.
//
// Why: start.mjs used to compare the sources with .next/BUILD_ID, which `next build` writes partway
// through: a build that failed or was interrupted after that counted as up to date on the next start.
// Decisions
// - `.next/.meridian-build-ok` is written by start.mjs only after `npm run build` exited 0, and
//   removed before a build starts. It holds the build's BUILD_ID and the time the build started.
// - Current: the marker is there, names the BUILD_ID now in .next (a build run some other way since
//   replaced it), and no source file changed since that build started (a file saved during the build
//   may not be in it).
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MARKER = ".meridian-build-ok";
/** Not sources: outputs, dependencies, data. */
const SKIP = new Set(["node_modules", ".next", ".turbo", "dist", "data", ".git", "test-results", "playwright-report"]);

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const name of readdirSync(path)) {
    if (SKIP.has(name)) continue;
    newest = Math.max(newest, newestMtime(join(path, name)));
  }
  return newest;
}

function buildId(nextDir) {
  try {
    return readFileSync(join(nextDir, "BUILD_ID"), "utf8").trim() || null;
  } catch {
    return null;
  }
}

/** Whether the build in `nextDir` finished and is newer than every file under `sources`. */
export function buildIsCurrent(nextDir, sources) {
  let marker;
  try {
    marker = JSON.parse(readFileSync(join(nextDir, MARKER), "utf8"));
  } catch {
    return false;
  }
  if (typeof marker?.buildId !== "string" || typeof marker.startedAt !== "number") return false;
  if (marker.buildId !== buildId(nextDir)) return false;
  return sources.every((source) => newestMtime(source) <= marker.startedAt);
}

/** Before a build: from now until it succeeds, the build in `nextDir` is not current. */
export function clearBuildMarker(nextDir) {
  rmSync(join(nextDir, MARKER), { force: true });
}

/** After a build that exited 0 and started at `startedAt` (ms since the epoch). */
export function writeBuildMarker(nextDir, startedAt) {
  const id = buildId(nextDir);
  if (id === null) throw new Error(`the build left no ${join(nextDir, "BUILD_ID")}`);
  writeFileSync(join(nextDir, MARKER), `${JSON.stringify({ buildId: id, startedAt })}\n`);
}
