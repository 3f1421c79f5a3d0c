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

// CPU seconds used by this process (user + system), less disturbed by a busy machine.
function cpuNow() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

// Encodes every text once; returns [wall seconds, cpu seconds, ids].
function pass() {
  const start = performance.now(), c0 = cpuNow();
  let ids = 0;
  for (const t of texts) ids += tok.encode(t, { add_special_tokens: false }).length;
  return [(performance.now() - start) / 1000, cpuNow() - c0, ids];
}

const [cold, coldCpu, ids] = pass();
t0 = performance.now();
const c0 = cpuNow();
for (let r = 0; r < reps; r++) pass();
const warm = (performance.now() - t0) / 1000 / reps, warmCpu = (cpuNow() - c0) / reps;
const f = (x) => +x.toFixed(2);
console.log(JSON.stringify({ impl: 'transformers.js', rows: texts.length, mb: +mb.toFixed(3), ids,
  load_s: +loadS.toFixed(3), cold_mb_s: f(mb / cold), warm_mb_s: f(mb / warm),
  cold_mb_cpu_s: f(mb / coldCpu), warm_mb_cpu_s: f(mb / warmCpu) }));
