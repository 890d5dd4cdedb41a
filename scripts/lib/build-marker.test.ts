// npm start's build check (scripts/lib/build-marker.mjs): only a build that finished counts, and only
// while no source changed since it started.
import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { buildIsCurrent, clearBuildMarker, writeBuildMarker } from "./build-marker.mjs";

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A console with one source file last changed at `sourceAt` (ms) and a .next directory. */
function checkout(sourceAt: number): { nextDir: string; sources: string[]; source: string } {
  const root = mkdtempSync(join(tmpdir(), "meridian-build-"));
  dirs.push(root);
  const src = join(root, "src");
  mkdirSync(src);
  const source = join(src, "page.tsx");
  writeFileSync(source, "export {};\n");
  utimesSync(source, sourceAt / 1000, sourceAt / 1000);
  utimesSync(src, sourceAt / 1000, sourceAt / 1000);
  const nextDir = join(root, ".next");
  mkdirSync(nextDir);
  return { nextDir, sources: [src], source };
}

const T = Date.UTC(2026, 0, 1);

test("a build that wrote BUILD_ID and then failed (or was stopped) is not current", () => {
  const { nextDir, sources } = checkout(T);
  clearBuildMarker(nextDir);
  // next build writes BUILD_ID partway through; the build then fails and no marker is written.
  writeFileSync(join(nextDir, "BUILD_ID"), "abc123");
  assert.equal(buildIsCurrent(nextDir, sources), false);
});

test("a build that finished is current until a source changes after it started", () => {
  const { nextDir, sources, source } = checkout(T);
  writeFileSync(join(nextDir, "BUILD_ID"), "abc123");
  writeBuildMarker(nextDir, T + 1_000);
  assert.equal(buildIsCurrent(nextDir, sources), true);
  // Saved while that build ran: the build may not have read it.
  utimesSync(source, (T + 2_000) / 1000, (T + 2_000) / 1000);
  assert.equal(buildIsCurrent(nextDir, sources), false);
});

test("a marker from an earlier build does not vouch for a later BUILD_ID; clearing it makes the build stale", () => {
  const { nextDir, sources } = checkout(T);
  writeFileSync(join(nextDir, "BUILD_ID"), "first");
  writeBuildMarker(nextDir, T + 1_000);
  assert.equal(buildIsCurrent(nextDir, sources), true);
  // A build run some other way (next build by hand) replaced the output, finished or not.
  writeFileSync(join(nextDir, "BUILD_ID"), "second");
  assert.equal(buildIsCurrent(nextDir, sources), false);
  writeFileSync(join(nextDir, "BUILD_ID"), "first");
  clearBuildMarker(nextDir);
  assert.equal(buildIsCurrent(nextDir, sources), false);
});

test("a build that exited 0 without a BUILD_ID is refused, not marked", () => {
  const { nextDir } = checkout(T);
  assert.throws(() => writeBuildMarker(nextDir, T), /left no .*BUILD_ID/);
});
