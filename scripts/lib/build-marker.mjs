// build-marker: whether the console's build is complete and built from the sources as they are now,
// for `npm start`. Not a CLI; imported by scripts/start.mjs (plain ESM, before any dependency is
// installed). Prints nothing.
//
// Why: start.mjs used to compare the sources with .next/BUILD_ID, which `next build` writes partway
// through: a build that failed or was interrupted after that counted as up to date on the next start.
// Then it compared the sources' mtimes with the wall-clock time the build started: after the clock
// was stepped back, or with sources restored with older mtimes (cp -p, rsync -a, tar x, a worktree
// switch that keeps times), an edited source looked older than the build and was never built.
// Decisions
// - `.next/.meridian-build-ok` is written by start.mjs only after `npm run build` exited 0, and
//   removed before a build starts. It holds the build's BUILD_ID and the fingerprint of the sources
//   taken when the build started.
// - The fingerprint is a SHA-256 over every source file's `path:size:mtimeMs`, sorted by path: no
//   clock is compared with another, and any difference (a file added, removed, changed, older or
//   newer) counts. Reading only metadata keeps it as cheap as the mtime walk it replaced.
// - Current: the marker is there, names the BUILD_ID now in .next (a build run some other way since
//   replaced it), and the sources' fingerprint now is the one taken when that build started (a file
//   saved during the build may not be in it).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MARKER = ".meridian-build-ok";
/** Not sources: outputs, dependencies, data. */
const SKIP = new Set(["node_modules", ".next", ".turbo", "dist", "data", ".git", "test-results", "playwright-report"]);

/** Appends `path:size:mtimeMs` of every file under `path` (itself, if a file) to `out`. */
function listFiles(path, out) {
  if (!existsSync(path)) return;
  const stat = statSync(path);
  if (!stat.isDirectory()) {
    out.push(`${path}:${stat.size}:${stat.mtimeMs}`);
    return;
  }
  for (const name of readdirSync(path)) {
    if (!SKIP.has(name)) listFiles(join(path, name), out);
  }
}

/** The fingerprint of every file under `sources` (paths, sizes, mtimes; not their content). */
export function sourceFingerprint(sources) {
  const lines = [];
  for (const source of sources) {
    const before = lines.length;
    listFiles(source, lines);
    if (lines.length === before) lines.push(`${source}:none`);
  }
  return createHash("sha256").update(lines.sort().join("\n")).digest("hex");
}

function buildId(nextDir) {
  try {
    return readFileSync(join(nextDir, "BUILD_ID"), "utf8").trim() || null;
  } catch {
    return null;
  }
}

/** Whether the build in `nextDir` finished and was built from sources with this fingerprint (sourceFingerprint). */
export function buildIsCurrent(nextDir, fingerprint) {
  let marker;
  try {
    marker = JSON.parse(readFileSync(join(nextDir, MARKER), "utf8"));
  } catch {
    return false;
  }
  if (typeof marker?.buildId !== "string" || typeof marker.sources !== "string") return false;
  return marker.buildId === buildId(nextDir) && marker.sources === fingerprint;
}

/** Before a build: from now until it succeeds, the build in `nextDir` is not current. */
export function clearBuildMarker(nextDir) {
  rmSync(join(nextDir, MARKER), { force: true });
}

/** After a build that exited 0, with the sources' fingerprint taken when it started. */
export function writeBuildMarker(nextDir, fingerprint) {
  const id = buildId(nextDir);
  if (id === null) throw new Error(`the build left no ${join(nextDir, "BUILD_ID")}`);
  writeFileSync(join(nextDir, MARKER), `${JSON.stringify({ buildId: id, sources: fingerprint })}\n`);
}
