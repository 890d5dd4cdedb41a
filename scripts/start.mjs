#!/usr/bin/env node
// npm start: installs what is missing, then (until the console lands) explains what it will start.
// Replaced by the console + demo fleet launcher.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureInstalled } from "./lib/ensure-install.mjs";

const root = join(fileURLToPath(import.meta.url), "..", "..");
ensureInstalled(root);
console.log("Meridian: the console and demo fleet are not built yet.");
