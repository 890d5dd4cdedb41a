#!/usr/bin/env node
// check-boundaries: the repository's import rules, in two parts.
//   1. dependency-cruiser with .dependency-cruiser.cjs over packages/, apps/, scripts/ and e2e/: no
//      cycles, pure packages import no I/O, packages never import apps, console server modules
//      import "server-only", every import resolves.
//   2. The client bundle: every module a "use client" file reaches through runtime imports
//      (type-only imports are erased at build time, so they do not count) must be no console
//      server module, import no "server-only" and no Node builtin.
// Usage: npm run check:boundaries   (npm test runs it too)
// Prints one line per violation and a summary line; exits 1 on any violation.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const cli = join(root, "node_modules", "dependency-cruiser", "bin", "dependency-cruise.mjs");
const targets = ["packages", "apps", "scripts", "e2e", "playwright.config.ts"];

const run = spawnSync(process.execPath, [cli, "--config", ".dependency-cruiser.cjs", "--output-type", "json", ...targets], {
  cwd: root,
  encoding: "utf8",
  maxBuffer: 256 * 1024 * 1024,
});
let result;
try {
  result = JSON.parse(run.stdout);
} catch {
  process.stderr.write(run.stderr);
  console.error(`check-boundaries: dependency-cruiser produced no report (exit ${run.status})`);
  process.exit(1);
}

const problems = [];
for (const v of result.summary.violations) {
  const where = v.cycle
    ? [v.from, ...v.cycle.map((step) => (typeof step === "string" ? step : step.name))].join(" → ")
    : v.from === v.to
      ? v.from
      : `${v.from} → ${v.to}`;
  problems.push(`${v.rule.name}: ${where}`);
}

// --- 2. what "use client" files pull into the browser bundle ----------------------------------
const modules = new Map(result.modules.map((m) => [m.source, m]));
const RUNTIME_ONLY = (dep) => !dep.dependencyTypes.includes("type-only") && !dep.dependencyTypes.includes("type-import");
const isServerOnly = (source) => /(^|\/)node_modules\/server-only\//.test(source);
const isConsoleServer = (source) => /^apps\/[^/]+\/src\/server\//.test(source);

function isClientEntry(source) {
  if (!/^apps\/.*\.(ts|tsx)$/.test(source)) return false;
  const text = readFileSync(join(root, source), "utf8");
  // The directive must be the first statement; comments may precede it.
  const body = text.replace(/^(\s*(\/\/[^\n]*\n|\/\*[\s\S]*?\*\/))*\s*/, "");
  return /^(["'])use client\1/.test(body);
}

const clientEntries = [...modules.keys()].filter(isClientEntry).sort();
const parent = new Map(clientEntries.map((source) => [source, null]));
const queue = [...clientEntries];
const chain = (source) => {
  const path = [];
  for (let at = source; at !== null && at !== undefined; at = parent.get(at)) path.unshift(at);
  return path.join(" → ");
};
while (queue.length > 0) {
  const source = queue.shift();
  for (const dep of modules.get(source)?.dependencies ?? []) {
    if (!RUNTIME_ONLY(dep)) continue;
    if (dep.dependencyTypes.includes("core")) {
      problems.push(`client-imports-no-node-builtins: ${chain(source)} → ${dep.module}`);
      continue;
    }
    if (isServerOnly(dep.resolved) || isConsoleServer(dep.resolved)) {
      problems.push(`client-imports-no-server-modules: ${chain(source)} → ${dep.resolved}`);
      continue;
    }
    if (parent.has(dep.resolved)) continue;
    parent.set(dep.resolved, source);
    queue.push(dep.resolved);
  }
}

for (const line of problems) console.log(line);
console.log(
  `check-boundaries: ${problems.length} violation(s); ${result.summary.totalCruised} modules, ` +
    `${result.summary.totalDependenciesCruised} imports, ${clientEntries.length} "use client" files reaching ${parent.size} modules`,
);
process.exit(problems.length === 0 && run.status === 0 ? 0 : 1);
