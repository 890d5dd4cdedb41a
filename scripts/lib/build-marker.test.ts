// npm start's build check (scripts/lib/build-marker.mjs): only a build that finished counts, and only
// while the sources are as they were when it started (a fingerprint of their paths, sizes and mtimes;
// no clock is compared, so a clock stepped back or an older mtime restored still rebuilds).
import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { buildIsCurrent, clearBuildMarker, sourceFingerprint, writeBuildMarker } from "./build-marker.mjs";

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A console with one source file last changed at `sourceAt` (ms) and a .next directory. */
function checkout(sourceAt: number): { nextDir: string; sources: string[]; source: string; src: string } {
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
  return { nextDir, sources: [src], source, src };
}

/** What start.mjs does: the fingerprint taken as the build starts, the marker written once it exited 0. */
function build(nextDir: string, sources: string[], id = "abc123"): void {
  const fingerprint = sourceFingerprint(sources);
  clearBuildMarker(nextDir);
  writeFileSync(join(nextDir, "BUILD_ID"), id);
  writeBuildMarker(nextDir, fingerprint);
}

const current = (nextDir: string, sources: string[]) => buildIsCurrent(nextDir, sourceFingerprint(sources));

const T = Date.UTC(2026, 0, 1);

test("a build that wrote BUILD_ID and then failed (or was stopped) is not current", () => {
  const { nextDir, sources } = checkout(T);
  clearBuildMarker(nextDir);
  // next build writes BUILD_ID partway through; the build then fails and no marker is written.
  writeFileSync(join(nextDir, "BUILD_ID"), "abc123");
  assert.equal(current(nextDir, sources), false);
});

test("a build that finished is current until a source changes, even one saved while it ran", () => {
  const { nextDir, sources, source } = checkout(T);
  const fingerprint = sourceFingerprint(sources);
  writeFileSync(join(nextDir, "BUILD_ID"), "abc123");
  // Saved while that build ran: the build may not have read it.
  utimesSync(source, (T + 2_000) / 1000, (T + 2_000) / 1000);
  writeBuildMarker(nextDir, fingerprint);
  assert.equal(current(nextDir, sources), false);
  build(nextDir, sources);
  assert.equal(current(nextDir, sources), true);
});

test("an edit after the build counts though the clock was stepped back (its mtime is older than the build)", () => {
  const { nextDir, sources, source, src } = checkout(Date.now());
  build(nextDir, sources);
  assert.equal(current(nextDir, sources), true);
  // The clock is stepped back an hour, then the source is edited: its mtime is the stepped-back clock.
  writeFileSync(source, "export const edited = 1;\n");
  const stepped = new Date(Date.now() - 3_600_000);
  utimesSync(source, stepped, stepped);
  utimesSync(src, stepped, stepped);
  assert.equal(current(nextDir, sources), false, "the edited source was ignored: the stale build would be served");
});

test("a source restored with an older mtime (cp -p, rsync -a, tar x), same size, counts; so do added and removed files", () => {
  const { nextDir, sources, source, src } = checkout(T);
  build(nextDir, sources);
  writeFileSync(source, "export {}; \n".slice(0, 11));
  utimesSync(source, (T - 86_400_000) / 1000, (T - 86_400_000) / 1000);
  utimesSync(src, T / 1000, T / 1000);
  assert.equal(current(nextDir, sources), false, "an older mtime");

  build(nextDir, sources);
  const added = join(src, "old.tsx");
  writeFileSync(added, "export {};\n");
  utimesSync(added, (T - 86_400_000) / 1000, (T - 86_400_000) / 1000);
  utimesSync(src, T / 1000, T / 1000);
  assert.equal(current(nextDir, sources), false, "a file added with an old mtime");

  build(nextDir, sources);
  rmSync(added);
  utimesSync(src, T / 1000, T / 1000);
  assert.equal(current(nextDir, sources), false, "a file removed");
});

test("outputs and dependencies under a source are not sources", () => {
  const { nextDir, sources, src } = checkout(T);
  build(nextDir, sources);
  for (const dir of ["node_modules", ".next", ".turbo", "dist"]) {
    mkdirSync(join(src, dir));
    writeFileSync(join(src, dir, "x.js"), "1\n");
  }
  assert.equal(current(nextDir, sources), true);
});

test("a marker from an earlier build does not vouch for a later BUILD_ID; clearing it makes the build stale", () => {
  const { nextDir, sources } = checkout(T);
  build(nextDir, sources, "first");
  assert.equal(current(nextDir, sources), true);
  // A build run some other way (next build by hand) replaced the output, finished or not.
  writeFileSync(join(nextDir, "BUILD_ID"), "second");
  assert.equal(current(nextDir, sources), false);
  writeFileSync(join(nextDir, "BUILD_ID"), "first");
  clearBuildMarker(nextDir);
  assert.equal(current(nextDir, sources), false);
});

test("a marker written by the version that compared clocks (no fingerprint) is not current", () => {
  const { nextDir, sources } = checkout(T);
  writeFileSync(join(nextDir, "BUILD_ID"), "abc123");
  writeFileSync(join(nextDir, ".meridian-build-ok"), `${JSON.stringify({ buildId: "abc123", startedAt: Date.now() })}\n`);
  assert.equal(current(nextDir, sources), false);
});

test("a build that exited 0 without a BUILD_ID is refused, not marked", () => {
  const { nextDir, sources } = checkout(T);
  assert.throws(() => writeBuildMarker(nextDir, sourceFingerprint(sources)), /left no .*BUILD_ID/);
});
