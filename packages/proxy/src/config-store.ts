// Persists the last LbConfig accepted over PUT /admin/config, so a restarted LB keeps routing with
// the console's latest config even while the console is down. Written durably (durable-file.ts), so a
// crash or a power loss mid-write leaves the previous config intact.
import { readFileSync, renameSync } from "node:fs";
import { parseLbConfig, type LbConfig } from "@meridian/protocol";
import { writeFileDurably } from "./durable-file";

export class ConfigStore {
  /** Why the last load set the persisted config aside, or null. */
  refused: string | null = null;

  constructor(private readonly path: string | null) {}

  /**
   * The persisted config, or null when there is none. A file that is not JSON throws, naming the
   * file. A config this LB's schema refuses (written by an older LB, with a value since refused,
   * such as a timer over 2^31 − 1 ms) is moved to `<file>.refused` and `refused` says why: the LB
   * starts from its config file and the console pushes its config again, where a throw would keep
   * the LB from starting until someone edited the file.
   */
  load(): LbConfig | null {
    this.refused = null;
    if (!this.path) return null;
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw cause;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      throw new Error(`state file ${this.path}: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
    try {
      return parseLbConfig(json);
    } catch (cause) {
      const aside = `${this.path}.refused`;
      renameSync(this.path, aside);
      this.refused = `${cause instanceof Error ? cause.message : String(cause)} (moved to ${aside})`;
      return null;
    }
  }

  save(config: LbConfig): void {
    if (!this.path) return;
    writeFileDurably(this.path, JSON.stringify(config, null, 2) + "\n");
  }
}
