// A durable replace leaves either the old file or the new one: a write cut short (a disk filling up,
// here a 4 KiB file-size limit on the writing process) throws before the rename and keeps the old.
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { writeFileDurably } from "./durable-file";

const dir = mkdtempSync(join(tmpdir(), "meridian-durable-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a replace writes the whole file and leaves no temporary file", () => {
  const path = join(dir, "state.json");
  const data = JSON.stringify({ replicas: "x".repeat(300_000) });
  writeFileDurably(path, data);
  assert.equal(readFileSync(path, "utf8"), data);
  assert.deepEqual(readdirSync(dir), ["state.json"]);
});

test("a write cut short by the disk keeps the old file whole", () => {
  const path = join(dir, "credentials.json");
  const good = JSON.stringify({ keys: ["good"] });
  writeFileSync(path, good);
  const module = new URL("./durable-file.ts", import.meta.url).pathname;
  const script = `import { writeFileDurably } from ${JSON.stringify(module)};
try { writeFileDurably(${JSON.stringify(path)}, "x".repeat(20000), 0o600); console.log("returned"); }
catch (error) { console.log("threw", error.code); }`;
  // bash's ulimit -f counts 1 KiB blocks; node ignores SIGXFSZ, so the write fails with EFBIG.
  const out = execFileSync("bash", ["-c", `ulimit -f 4; exec node --import tsx --input-type=module -e "$0"`, script], {
    encoding: "utf8",
    cwd: new URL("..", import.meta.url).pathname,
  });
  assert.equal(out.trim(), "threw EFBIG");
  assert.equal(readFileSync(path, "utf8"), good);
});
