/**
 * §13.7 `Blob`, `File` and `FormData` of a sandbox made with `webApis: true`, as bodies of `Request`, `Response` and
 * `fetch`: the multipart/form-data the guest's `fetch` sends is parsed by the host platform's own `formData()` (the
 * oracle wherever the suite runs). WPT's FileAPI and XHR FormData tests are the model of what is checked.
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode, SandboxOptions } from "../../src/core/types.js";
import { ok } from "./helpers.js";

const js = { language: "javascript" } as const;
const API = "https://api.example.com";

export function webBlobSuite(sandbox: (settings: SandboxOptions) => RunCode): void {
  const runCode = sandbox({ webApis: true });

  describe("§13.7 Blob, File and FormData", () => {
    it("a Blob joins strings (as UTF-8), buffers and blobs, keeps a printable type lowercased, and slices", async () => {
      const source = `const b = new Blob(["héllo", new Uint8Array([33]), new Blob([" x"]), new ArrayBuffer(1)], { type: "Text/Plain" });
      const slices = [b.slice(1, -3), b.slice(-4), b.slice(5, 2), b.slice(0, 100, "A/B")];
      export default [b.size, b.type, await b.text(), Array.from(await b.bytes()).slice(-3),
        (await b.arrayBuffer()).byteLength, await Promise.all(slices.map(async (s) => [s.size, s.type, await s.text()])),
        new Blob([], { type: "a\\u00e9" }).type, await new Blob(["a\\r\\nb\\rc"], { endings: "native" }).text(),
        new Blob().size, Object.prototype.toString.call(b)]`;
      expect(await ok(runCode, source, js)).toEqual([
        10,
        "text/plain",
        "héllo! x\0",
        [32, 120, 0],
        10,
        [
          [6, "", "éllo!"],
          [4, "", "! x\0"],
          [0, "", ""],
          [10, "a/b", "héllo! x\0"],
        ],
        "",
        "a\nb\nc",
        0,
        "[object Blob]",
      ]);
    });

    it("a File is a Blob with a name and lastModified; bad arguments are TypeErrors", async () => {
      const source = `const f = new File(["abc"], "a.txt", { type: "text/plain", lastModified: 42 });
      const caught = (f) => { try { f(); return "no error"; } catch (e) { return e.name; } };
      export default [f.name, f.lastModified, f.size, f.type, await f.text(), f instanceof Blob, String(f),
        typeof new File([], "x").lastModified, caught(() => new File(["x"])), caught(() => new Blob("x")),
        caught(() => new Blob([], { endings: "crlf" }))]`;
      expect(await ok(runCode, source, js)).toEqual([
        "a.txt",
        42,
        3,
        "text/plain",
        "abc",
        true,
        "[object File]",
        "number",
        "TypeError",
        "TypeError",
        "TypeError",
      ]);
    });

    it("FormData appends, sets, gets, deletes and iterates entries in order; blobs become Files", async () => {
      const source = `const fd = new FormData();
      fd.append("a", "1"); fd.append("b", new Blob(["zz"], { type: "text/x" })); fd.append("a", 2);
      fd.append("c", new File(["abc"], "a.txt"), "renamed.txt"); fd.append("d", new File(["q"], "keep.txt"));
      const before = [fd.get("a"), fd.getAll("a"), fd.has("b"), fd.get("missing"), fd.getAll("missing")];
      const b = fd.get("b");
      const files = [b instanceof File, b.name, b.type, fd.get("c").name, fd.get("d").name];
      fd.set("a", "only"); fd.delete("b");
      const seen = []; fd.forEach((value, name, self) => seen.push([name, typeof value, self === fd]));
      let refused; try { fd.append("x", "text", "name.txt"); } catch (e) { refused = e.name; }
      export default [before, files, [...fd.keys()], [...fd.values()].map((v) => typeof v === "string" ? v : v.name),
        seen, refused, String(fd.entries()), String(fd)]`;
      expect(await ok(runCode, source, js)).toEqual([
        ["1", ["1", "2"], true, null, []],
        [true, "blob", "text/x", "renamed.txt", "keep.txt"],
        ["a", "c", "d"],
        ["only", "renamed.txt", "keep.txt"],
        [
          ["a", "string", true],
          ["c", "object", true],
          ["d", "object", true],
        ],
        "TypeError",
        "[object FormData Iterator]",
        "[object FormData]",
      ]);
    });

    it("bodies: a Blob sends its bytes and type, Response.blob() reads one, a FormData is multipart/form-data", async () => {
      const source = `const fd = new FormData(); fd.append("name", 'a "q"\\nb'); fd.append("f", new Blob(["x"]), "f.bin");
      const response = new Response(fd);
      const type = response.headers.get("content-type");
      const boundary = type.slice("multipart/form-data; boundary=".length);
      const text = await response.text();
      const blob = await new Response(new Blob(["hi"], { type: "text/x" })).blob();
      export default [type.startsWith("multipart/form-data; boundary="), text.split(boundary).join("B"),
        blob.type, await blob.text(), new Request("https://x.org", { method: "POST", body: new Blob(["1"]) }).headers.get("content-type")]`;
      expect(await ok(runCode, source, js)).toEqual([
        true,
        '--B\r\nContent-Disposition: form-data; name="name"\r\n\r\na "q"\r\nb\r\n' +
          '--B\r\nContent-Disposition: form-data; name="f"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\nx\r\n' +
          "--B--\r\n",
        "text/x",
        "hi",
        null,
      ]);
    });

    it("formData() reads a multipart or urlencoded body back as a FormData, and refuses any other", async () => {
      const source = `const fd = new FormData();
      fd.append("t", "a\\r\\nb"); fd.append("f", new File(["é!"], "x.txt", { type: "text/plain" })); fd.append("t", "2");
      const back = await new Response(fd).formData();
      const file = back.get("f");
      const urlencoded = await new Response(new URLSearchParams("a=1&b=%C3%A9&a=2")).formData();
      const caught = (p) => p.then(() => "no error", (e) => [e.name, e.message]);
      export default [[...back.keys()], back.getAll("t"), [file.name, file.type, await file.text()],
        [...urlencoded], await caught(new Response("x").formData()),
        await caught(new Response("junk", { headers: { "content-type": "multipart/form-data; boundary=zz" } }).formData())]`;
      expect(await ok(runCode, source, js)).toEqual([
        ["t", "f", "t"],
        ["a\r\nb", "2"],
        ["x.txt", "text/plain", "é!"],
        [
          ["a", "1"],
          ["b", "é"],
          ["a", "2"],
        ],
        ["TypeError", "Could not parse content as FormData."],
        ["TypeError", "Could not parse content as FormData."],
      ]);
    });

    it("fetch sends a FormData as multipart the host platform's own parser reads back", async () => {
      const parsed: unknown[] = [];
      const fetch = async (_url: string, init: RequestInit): Promise<Response> => {
        const form = await new Response(init.body as ArrayBuffer, { headers: init.headers as HeadersInit }).formData();
        for (const [name, value] of form) {
          parsed.push(typeof value === "string" ? [name, value] : [name, value.name, value.type, await value.text()]);
        }
        return new Response("ok");
      };
      const withFetch = sandbox({ webApis: true, fetch: { allow: [API], fetch } });
      const source = `const fd = new FormData();
      fd.append("title", "héllo"); fd.append("doc", new File(['{"a":1}'], "d.json", { type: "application/json" }));
      fd.append("raw", new Blob([new Uint8Array([1, 2, 3])]));
      export default await (await fetch("${API}/upload", { method: "POST", body: fd })).text()`;
      expect(await ok(withFetch, source, js)).toBe("ok");
      expect(parsed).toEqual([
        ["title", "héllo"],
        ["doc", "d.json", "application/json", '{"a":1}'],
        ["raw", "blob", "application/octet-stream", "\u0001\u0002\u0003"],
      ]);
    });
  });
}
