#!/usr/bin/env node
// meridian-replay: open-loop trace replay client measuring TTFT, E2E and ITL.
// Runs the TypeScript source through tsx, so there is no separate compile step.
import { register } from "tsx/esm/api";

register();
await import("../src/replay/main.ts");
