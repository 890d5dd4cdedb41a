// Values the e2e web server is started with and the specs log in or call LBs with. Shared by
// playwright.config.ts and the specs so the two cannot drift apart.
export const CONSOLE_PORT = 3100;
export const DEMO_BASE_PORT = 4700;
export const BASE_URL = `http://127.0.0.1:${CONSOLE_PORT}`;

export const OPERATOR = { username: "admin", password: "e2e-operator-pass-1" } as const;
export const VIEWER = { username: "viewer", password: "e2e-viewer-pass-1" } as const;
export const LB_TOKEN = "e2e-lb-token-0123456789";
