// Persists the last LbConfig accepted over PUT /admin/config, so a restarted LB keeps routing with
// the console's latest config even while the console is down. Written to a temp file and renamed,
// so a crash mid-write leaves the previous config intact.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseLbConfig, type LbConfig } from "@meridian/protocol";

export class ConfigStore {
  constructor(private readonly path: string | null) {}

  /** The persisted config, or null when there is none. A corrupt file throws, naming the file. */
  load(): LbConfig | null {
    if (!this.path) return null;
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw cause;
    }
    try {
      return parseLbConfig(JSON.parse(text));
    } catch (cause) {
      throw new Error(`state file ${this.path}: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
  }

  save(config: LbConfig): void {
    if (!this.path) return;
    mkdirSync(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(config, null, 2) + "\n");
    renameSync(temporary, this.path);
  }
}
