/** This package's version (package.json's), which a session snapshot names: only the same version restores it. */
export const RUNCODE_VERSION = "0.1.0";
