#!/usr/bin/env node
// meridian-proxy: the regional load balancer.
// Runs the TypeScript source through tsx, so there is no separate compile step.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
