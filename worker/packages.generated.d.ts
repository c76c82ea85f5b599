/**
 * The deployment's npm packages: worker/packages.generated.js, which `npm run build:web` writes from the packages lock
 * file (web/packages-plugin.ts).
 * @module
 */

/** Each package's specifier (what the guest imports) and version, as the lock file lists them. */
export declare const packages: readonly { specifier: string; version: string }[];
/** The packages' bundles by specifier: the boot modules of the edge's and the playground's sandboxes. */
export declare const bootModules: Readonly<Record<string, string>>;
