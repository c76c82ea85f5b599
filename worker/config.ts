/**
 * The edge host's settings, read once from the Worker's environment (`[vars]` in wrangler.toml, secrets, `.dev.vars`
 * or `--var` locally): src/host/settings.ts reads them, as it does for `runcode serve`.
 * @module
 */
import { type HostSettings, hostSettingsOf, type Settings } from "../src/host/settings.js";

export type EdgeConfig = HostSettings;

export const configOf = (env: Env): Promise<EdgeConfig> => hostSettingsOf(env as unknown as Settings);
