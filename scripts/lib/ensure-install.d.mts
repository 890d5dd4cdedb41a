// Types of ensure-install.mjs (plain ESM so that it runs before any dependency is installed).
export function ensureInstalled(root: string): boolean;
export function installEnv(env: NodeJS.ProcessEnv, execPath?: string): NodeJS.ProcessEnv;
export function nodeHeadersDir(execPath?: string): string | null;
export function installedTreeMatches(root: string): boolean;
