/**
 * `Blob` and `File` (File API) and `FormData` (XMLHttpRequest's, without a form element) of a sandbox made with
 * `webApis: true`: a blob is bytes held whole (no `stream()`, as bodies have no streams, see web-fetch.ts). Puts on
 * the kit what `fetch`'s bodies use: a blob's bytes and type, a blob made of bytes, a form's multipart/form-data
 * encoding (HTML's algorithm, UTF-8, a boundary of the run's `Math.random`), and a body read back as a form
 * (multipart/form-data or application/x-www-form-urlencoded, as Fetch's `formData()`). Shipped as source text (see core.ts).
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

interface Entry {
  name: string;
  value: string | object;
}

export function guestWebBlob(_hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const { apply } = Reflect;
  const { defineProperty } = Object;
  const { isView } = ArrayBuffer;
  const ArrayBufferCtor = ArrayBuffer;
  const U8 = Uint8Array;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const { max, min, trunc, floor } = Math;
  const { isFinite: finite } = Number;
  const random = Math.random;
  const now = Date.now;
  const { install, required, dictionary, usv, utf8Encode, utf8Decode, bytesOf } = kit;
  // Installed before this one.
  const URLSearchParamsCtor = (globalThis as unknown as { URLSearchParams: new (init: string) => object })
    .URLSearchParams;
  const { replace } = String.prototype;
  const PRINTABLE = /^[\x20-\x7E]*$/;
  const LINE_BREAKS = /\r\n|\r|\n/g;

  /** WebIDL's `long long` (a slice's start or end, a file's lastModified): not finite is 0. */
  const integer = (value: unknown) => {
    const n = +(value as number);
    return finite(n) ? trunc(n) : 0;
  };
  /** A blob's type as the File API keeps it: lowercased, or "" when it has a character outside U+0020-U+007E. */
  const typeOf = (value: unknown) => {
    const text = `${value}`;
    return PRINTABLE.test(text) ? text.toLowerCase() : "";
  };

  let blobBytes: (blob: Blob) => Uint8Array;
  class Blob {
    #bytes: Uint8Array;
    #type: string;
    constructor(blobParts: unknown = undefined, options: unknown = undefined) {
      const settings = dictionary(options, "Blob");
      const endings = settings.endings === undefined ? "transparent" : `${settings.endings}`;
      if (endings !== "transparent" && endings !== "native") {
        throw new TypeErrorCtor(`Blob: ${endings} is not a valid endings value`);
      }
      this.#bytes = partsBytes(blobParts, endings === "native", "Blob");
      this.#type = settings.type === undefined ? "" : typeOf(settings.type);
    }
    static {
      blobBytes = (blob) => blob.#bytes;
    }
    get size(): number {
      return this.#bytes.length;
    }
    get type(): string {
      return this.#type;
    }
    slice(start: unknown = undefined, end: unknown = undefined, contentType: unknown = undefined): Blob {
      const size = this.#bytes.length;
      const from = start === undefined ? 0 : integer(start);
      const to = end === undefined ? size : integer(end);
      const first = from < 0 ? max(size + from, 0) : min(from, size);
      const last = to < 0 ? max(size + to, 0) : min(to, size);
      const blob = new Blob();
      blob.#bytes = this.#bytes.slice(first, max(first, last));
      blob.#type = contentType === undefined ? "" : typeOf(contentType);
      return blob;
    }
    text(): Promise<string> {
      return PromiseCtor.resolve(utf8Decode(this.#bytes));
    }
    arrayBuffer(): Promise<ArrayBuffer> {
      return PromiseCtor.resolve(this.#bytes.slice().buffer);
    }
    bytes(): Promise<Uint8Array> {
      return PromiseCtor.resolve(this.#bytes.slice());
    }
  }
  defineProperty(Blob.prototype, Symbol.toStringTag, { value: "Blob", configurable: true });

  /** A blob's bytes (no copy); `undefined` for anything that is not a Blob. */
  const bytesOfBlob = (value: unknown) => (value instanceof Blob ? blobBytes(value) : undefined);

  /** The bytes of a sequence of BlobParts: buffers as they are, blobs' bytes, strings as UTF-8. */
  const partsBytes = (parts: unknown, native: boolean, what: string) => {
    if (parts === undefined) return new U8(0);
    if (
      typeof parts !== "object" ||
      parts === null ||
      typeof (parts as Iterable<unknown>)[Symbol.iterator] !== "function"
    ) {
      throw new TypeErrorCtor(`${what}: the parts must be a sequence`);
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (const part of parts as Iterable<unknown>) {
      let chunk: Uint8Array;
      const blob = bytesOfBlob(part);
      if (blob !== undefined) chunk = blob;
      else if (isView(part) || part instanceof ArrayBufferCtor) chunk = bytesOf(part, what);
      else {
        const text = usv(part);
        chunk = utf8Encode(native ? (apply(replace, text, [LINE_BREAKS, "\n"]) as string) : text);
      }
      chunks[chunks.length] = chunk;
      total += chunk.length;
    }
    const bytes = new U8(total);
    let at = 0;
    for (let i = 0; i < chunks.length; i++) {
      bytes.set(chunks[i] as Uint8Array, at);
      at += (chunks[i] as Uint8Array).length;
    }
    return bytes;
  };

  class File extends Blob {
    #name: string;
    #lastModified: number;
    constructor(fileBits: unknown, fileName: unknown, options: unknown = undefined) {
      required(arguments.length, 2, "File");
      super(fileBits, options);
      this.#name = usv(fileName);
      const settings = dictionary(options, "File");
      this.#lastModified = settings.lastModified === undefined ? now() : integer(settings.lastModified);
    }
    get name(): string {
      return this.#name;
    }
    get lastModified(): number {
      return this.#lastModified;
    }
    get webkitRelativePath(): string {
      return "";
    }
  }
  defineProperty(File.prototype, Symbol.toStringTag, { value: "File", configurable: true });

  /** XHR's "create an entry": a blob value becomes a File named `filename`, its own name, or "blob". */
  const entryOf = (args: IArguments | unknown[], what: string): Entry => {
    const name = usv(args[0]);
    const value = args[1];
    if (value instanceof Blob) {
      const filename =
        args.length > 2 && args[2] !== undefined ? usv(args[2]) : value instanceof File ? value.name : "blob";
      if (value instanceof File && args.length <= 2) return { name, value };
      return {
        name,
        value: new File([value], filename, {
          type: value.type,
          lastModified: value instanceof File ? value.lastModified : undefined,
        }),
      };
    }
    if (args.length > 2) throw new TypeErrorCtor(`${what}: a value with a filename must be a Blob`);
    return { name, value: usv(value) };
  };

  let listOf: (form: FormData) => Entry[];
  class FormData {
    #list: Entry[] = [];
    constructor(form: unknown = undefined) {
      if (form !== undefined) throw new TypeErrorCtor("FormData: the sandbox has no form elements");
    }
    static {
      listOf = (form) => form.#list;
    }
    append(_name: unknown, _value: unknown) {
      required(arguments.length, 2, "FormData.append");
      const list = this.#list;
      list[list.length] = entryOf(arguments, "FormData.append");
    }
    delete(name: unknown) {
      required(arguments.length, 1, "FormData.delete");
      const key = usv(name);
      const kept: Entry[] = [];
      for (const entry of this.#list) if (entry.name !== key) kept[kept.length] = entry;
      this.#list = kept;
    }
    get(name: unknown): string | object | null {
      required(arguments.length, 1, "FormData.get");
      const key = usv(name);
      for (const entry of this.#list) if (entry.name === key) return entry.value;
      return null;
    }
    getAll(name: unknown): (string | object)[] {
      required(arguments.length, 1, "FormData.getAll");
      const key = usv(name);
      const found: (string | object)[] = [];
      for (const entry of this.#list) if (entry.name === key) found[found.length] = entry.value;
      return found;
    }
    has(name: unknown): boolean {
      required(arguments.length, 1, "FormData.has");
      const key = usv(name);
      for (const entry of this.#list) if (entry.name === key) return true;
      return false;
    }
    set(_name: unknown, _value: unknown) {
      required(arguments.length, 2, "FormData.set");
      const entry = entryOf(arguments, "FormData.set");
      const list: Entry[] = [];
      let placed = false;
      for (const old of this.#list) {
        if (old.name !== entry.name) list[list.length] = old;
        else if (!placed) {
          list[list.length] = entry;
          placed = true;
        }
      }
      if (!placed) list[list.length] = entry;
      this.#list = list;
    }
    forEach(callback: unknown, thisArg: unknown = undefined) {
      required(arguments.length, 1, "FormData.forEach");
      if (typeof callback !== "function") throw new TypeErrorCtor("FormData.forEach: the callback must be a function");
      for (let i = 0; i < this.#list.length; i++) {
        const entry = this.#list[i] as Entry;
        apply(callback, thisArg, [entry.value, entry.name, this]);
      }
    }
    keys(): Iterator<string> {
      return formIterator(this, 0);
    }
    values(): Iterator<string | object> {
      return formIterator(this, 1);
    }
    entries(): Iterator<[string, string | object]> {
      return formIterator(this, 2);
    }
  }
  defineProperty(FormData.prototype, Symbol.iterator, {
    value: FormData.prototype.entries,
    writable: true,
    configurable: true,
  });
  defineProperty(FormData.prototype, Symbol.toStringTag, { value: "FormData", configurable: true });

  const formIterator = kit.pairIterator("FormData", (form) => listOf(form as FormData));

  /** HTML's escaping of a name or filename in a multipart header, after its line breaks are made CRLF. */
  const escapeName = (text: string) =>
    apply(replace, apply(replace, text, [LINE_BREAKS, "\r\n"]), [
      /[\r\n"]/g,
      (c: string) => (c === "\r" ? "%0D" : c === "\n" ? "%0A" : "%22"),
    ]) as string;
  const BOUNDARY_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz";

  kit.blobOf = (value) => {
    const bytes = bytesOfBlob(value);
    return bytes === undefined ? undefined : { bytes, type: (value as Blob).type };
  };
  kit.makeBlob = (bytes, type) => new Blob([bytes], { type });
  kit.multipart = (value) => {
    if (!(value instanceof FormData)) return undefined;
    let boundary = "----RuncodeFormBoundary";
    for (let i = 0; i < 16; i++) boundary += BOUNDARY_DIGITS[floor(random() * 36)] as string;
    const parts: unknown[] = [];
    for (const { name, value: entry } of listOf(value)) {
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"`;
      if (typeof entry === "string") {
        parts[parts.length] = `${head}\r\n\r\n${apply(replace, entry, [LINE_BREAKS, "\r\n"]) as string}\r\n`;
        continue;
      }
      const file = entry as File;
      head += `; filename="${escapeName(file.name)}"\r\nContent-Type: ${file.type === "" ? "application/octet-stream" : file.type}\r\n\r\n`;
      parts[parts.length] = head;
      parts[parts.length] = file;
      parts[parts.length] = "\r\n";
    }
    parts[parts.length] = `--${boundary}--\r\n`;
    return { bytes: partsBytes(parts, false, "FormData"), type: `multipart/form-data; boundary=${boundary}` };
  };

  /** Where `needle` first occurs in `bytes` from `from`, or -1. */
  const find = (bytes: Uint8Array, needle: Uint8Array, from: number) => {
    const first = needle[0];
    for (let i = from; i + needle.length <= bytes.length; i++) {
      if (bytes[i] !== first) continue;
      let j = 1;
      while (j < needle.length && bytes[i + j] === needle[j]) j++;
      if (j === needle.length) return i;
    }
    return -1;
  };
  const BOUNDARY_PARAM = /;\s*boundary=(?:"([^"]*)"|([^;\s]*))/i;
  const DISPOSITION_PARAM = /;\s*(name|filename)="([^"]*)"/gi;
  const notForm = () => new TypeErrorCtor("Could not parse content as FormData.");
  /** A multipart/form-data body as a FormData (each part's name, filename and Content-Type read). */
  const parseMultipart = (bytes: Uint8Array, boundary: string) => {
    const form = new FormData();
    const delimiter = utf8Encode(`--${boundary}`);
    const headEnd = utf8Encode("\r\n\r\n");
    let at = find(bytes, delimiter, 0);
    if (at < 0) throw notForm();
    for (;;) {
      at += delimiter.length;
      if (bytes[at] === 0x2d && bytes[at + 1] === 0x2d) return form;
      if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) throw notForm();
      const head = find(bytes, headEnd, at + 2);
      if (head < 0) throw notForm();
      const next = find(bytes, delimiter, head + 4);
      if (next < 2 || bytes[next - 2] !== 0x0d || bytes[next - 1] !== 0x0a) throw notForm();
      let name: string | undefined;
      let filename: string | undefined;
      let type = "";
      const lines = utf8Decode(bytes.subarray(at + 2, head)).split("\r\n");
      for (const line of lines) {
        const colon = line.indexOf(":");
        const field = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (field === "content-type") type = value;
        if (field !== "content-disposition") continue;
        DISPOSITION_PARAM.lastIndex = 0;
        for (let m = DISPOSITION_PARAM.exec(value); m !== null; m = DISPOSITION_PARAM.exec(value)) {
          if ((m[1] as string).toLowerCase() === "name") name = m[2];
          else filename = m[2];
        }
      }
      if (name === undefined) throw notForm();
      const body = bytes.subarray(head + 4, next - 2);
      if (filename === undefined) form.append(name, utf8Decode(body));
      else form.append(name, new File([body], filename, { type }));
      at = next;
    }
  };
  kit.parseForm = (bytes, contentType) => {
    const essence = contentType.split(";")[0]?.trim().toLowerCase();
    if (essence === "multipart/form-data") {
      const match = BOUNDARY_PARAM.exec(contentType);
      const boundary = match === null ? "" : (match[1] ?? match[2] ?? "");
      if (boundary === "") throw notForm();
      return parseMultipart(bytes, boundary);
    }
    if (essence !== "application/x-www-form-urlencoded") throw notForm();
    const form = new FormData();
    for (const [name, value] of new URLSearchParamsCtor(utf8Decode(bytes)) as unknown as Iterable<[string, string]>) {
      form.append(name, value);
    }
    return form;
  };

  install("Blob", Blob);
  install("File", File);
  install("FormData", FormData);
}
