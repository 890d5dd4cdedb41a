// Import boundaries of the repository, checked by dependency-cruiser through
// scripts/check-boundaries.mjs (`npm run check:boundaries`; `npm test` runs it). That script also
// checks what depends on file contents: the modules a "use client" component pulls into the
// browser bundle. Type-only imports are part of the graph (they make cycles too) but are erased
// at build time, so the rules about runtime code ignore them.
//
// Limit: an import check cannot see globals. Pure packages' use of process, timers or Date is
// caught by Biome's noRestrictedGlobals (biome.jsonc) instead.

/** Pure packages: decisions only, no I/O (README.md "Layout"). lb-core is listed before it exists. */
const PURE = "^packages/(routing|tuner|lb-core)/";
const PURE_SOURCE = `${PURE}src/`;
/** Tests of pure packages run under node:test and may use node:test, node:assert and so on. */
const TESTS = "\\.test\\.ts$|/test-helpers\\.ts$|/test/";

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "No import cycle anywhere, type-only imports included: layers must point one way.",
      from: {},
      to: { circular: true },
    },
    {
      name: "pure-no-node-builtins",
      severity: "error",
      comment: "Pure packages do no I/O: no node: builtins (fs, http, timers, crypto, ...).",
      from: { path: PURE_SOURCE, pathNot: TESTS },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "pure-no-npm-packages",
      severity: "error",
      comment: "Pure packages depend on no npm package (undici, pino, better-sqlite3, ...): a dependency there needs a review of this rule first.",
      from: { path: PURE_SOURCE, pathNot: TESTS },
      to: { dependencyTypes: ["npm", "npm-dev", "npm-optional", "npm-peer", "npm-bundled", "npm-no-pkg", "npm-unknown"] },
    },
    {
      name: "pure-imports-only-pure",
      severity: "error",
      comment: "Pure packages import code only from pure packages (types from anywhere in packages/ are fine).",
      from: { path: PURE_SOURCE, pathNot: TESTS },
      to: { path: "^packages/", pathNot: PURE, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "packages-never-import-apps",
      severity: "error",
      comment: "Packages are libraries of the apps, never the other way round.",
      from: { path: "^packages/" },
      to: { path: "^apps/" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that resolves to nothing is a typo or a missing dependency.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  required: [
    {
      name: "server-modules-import-server-only",
      severity: "error",
      comment: 'Every console server module starts with import "server-only" (a build error if a client component pulls it in).',
      module: { path: "^apps/[^/]+/src/server/", pathNot: "\\.test\\.ts$" },
      to: { path: "node_modules/server-only/" },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(\\.next|dist|\\.turbo|fixtures)/" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    skipAnalysisNotInRules: false,
  },
};
