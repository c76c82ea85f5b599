/** The pinned `@swc/wasm-typescript`'s version, glue and wasm (see scripts/swc-wasm.mjs). */
export declare function swcPackage(): { version: string; glue: string; wasm: Uint8Array };
