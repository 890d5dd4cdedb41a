// Types of ensure-install.mjs (plain ESM so that it runs before any dependency is installed).
export function ensureInstalled(root: string): boolean;
export function installStep(root: string): { label: string; command: string; args: string[]; env: NodeJS.ProcessEnv; finish(): void } | null;
export function installEnv(env: NodeJS.ProcessEnv, execPath?: string): NodeJS.ProcessEnv;
export function nodeHeadersDir(execPath?: string): string | null;
export function installedTreeMatches(root: string): boolean;
