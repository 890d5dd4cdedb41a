#!/usr/bin/env node
// meridian-sim: the fleet simulator CLI (compare, tune, sweep); see packages/sim/README.md.
// Runs the TypeScript source through tsx, so there is no separate compile step.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
