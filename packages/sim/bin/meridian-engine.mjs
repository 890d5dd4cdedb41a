#!/usr/bin/env node
// meridian-engine: a simulated SGLang/vLLM engine serving the OpenAI API over HTTP.
// Runs the TypeScript source through tsx, so there is no separate compile step.
import { register } from "tsx/esm/api";

register();
await import("../src/server/main.ts");
