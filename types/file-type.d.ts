/**
 * file-type is ESM-only and declares its types through `exports`, which this project's
 * `moduleResolution: node` does not read; this is the part of its API pipegate uses.
 * Node 20.19+ and Node 22 load it with require(esm); esbuild bundles it; jest transforms it
 * (jest.config.js transformIgnorePatterns).
 */
declare module 'file-type' {
  export interface FileTypeResult {
    readonly ext: string;
    readonly mime: string;
  }
  export function fileTypeFromBuffer(buffer: Uint8Array | ArrayBuffer): Promise<FileTypeResult | undefined>;
  export const reasonableDetectionSizeInBytes: number;
}
