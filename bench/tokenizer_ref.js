// Encode throughput of the reference (transformers.js tokenizers, @lenml/tokenizers from
// npm) on the same JSONL corpus as tokenizer_bench: one cold pass, then REPS warm ones.
// usage: node tokenizer_ref.js NPM_DIR TOKENIZER_DIR CORPUS.jsonl [REPS]
'use strict';
const fs = require('fs');
const path = require('path');

const [npmDir, dir, corpusPath, repsArg] = process.argv.slice(2);
const reps = Number(repsArg || 3);
const { TokenizerLoader } = require(path.join(npmDir, 'node_modules/@lenml/tokenizers'));

let t0 = performance.now();
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')),
});
const loadS = (performance.now() - t0) / 1000;
const texts = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.trim())
  .map((l) => JSON.parse(l).text).filter((t) => typeof t === 'string');
const mb = texts.reduce((s, t) => s + Buffer.byteLength(t, 'utf8'), 0) / 1e6;

// Encodes every text once; returns [seconds, ids].
function pass() {
  const start = performance.now();
  let ids = 0;
  for (const t of texts) ids += tok.encode(t, { add_special_tokens: false }).length;
  return [(performance.now() - start) / 1000, ids];
}

const [cold, ids] = pass();
t0 = performance.now();
for (let r = 0; r < reps; r++) pass();
const warm = (performance.now() - t0) / 1000 / reps;
console.log(JSON.stringify({ impl: 'transformers.js', rows: texts.length, mb: +mb.toFixed(3), ids,
  load_s: +loadS.toFixed(3), cold_mb_s: +(mb / cold).toFixed(2), warm_mb_s: +(mb / warm).toFixed(2) }));
