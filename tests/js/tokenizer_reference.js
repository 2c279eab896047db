// Reference encodings and decodings from the Hugging Face tokenizers library (npm `tokenizers`,
// the Rust implementation through N-API), for dq4's differential tokenizer test and benchmark.
//
// usage: node tokenizer_reference.js <jobs.json> <out.json>
//   jobs.json: [{"tokenizer": "<path of tokenizer.json>", "texts": ["...", ...],
//                "id_lists": [[1, 2, ...], ...]}, ...]
//   out.json:  [{"encodings": [{"ids": [...], "ids_with_special_tokens": [...],
//                               "decoded": "...", "decoded_skip_special": "..."}, ...],
//                "decodings": [{"text": "...", "text_skip_special": "..."}, ...]}, ...]
// usage: node tokenizer_reference.js --bench <tokenizer.json> <text file>
//   encodes the file's text (UTF-8) once to warm up, then times encodes for about a second and
//   prints {"seconds_per_encode": s, "bytes": n, "tokens": n}.
'use strict';
const fs = require('fs');
const {Tokenizer} = require('tokenizers');

async function reference(jobsPath, outPath) {
  const jobs = JSON.parse(fs.readFileSync(jobsPath, 'utf8'));
  const results = [];
  for (const job of jobs) {
    const tokenizer = Tokenizer.fromFile(job.tokenizer);
    // A prompt is encoded whole, as transformers and vLLM do (and dq4): the file's "truncation"
    // and "padding" are training-time settings that encode() would otherwise apply.
    tokenizer.disableTruncation();
    tokenizer.disablePadding();
    const encodings = [];
    for (const text of job.texts) {
      const ids = (await tokenizer.encode(text, null, {addSpecialTokens: false})).getIds();
      const withSpecial = (await tokenizer.encode(text, null, {addSpecialTokens: true})).getIds();
      encodings.push({
        ids,
        ids_with_special_tokens: withSpecial,
        decoded: await tokenizer.decode(ids, false),
        decoded_skip_special: await tokenizer.decode(withSpecial, true),
      });
    }
    const decodings = [];
    for (const ids of job.id_lists || []) {
      decodings.push({
        text: await tokenizer.decode(ids, false),
        text_skip_special: await tokenizer.decode(ids, true),
      });
    }
    results.push({encodings, decodings});
  }
  fs.writeFileSync(outPath, JSON.stringify(results));
}

async function bench(tokenizerPath, textPath) {
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const text = fs.readFileSync(textPath, 'utf8');
  const tokens = (await tokenizer.encode(text, null, {addSpecialTokens: false})).getIds().length;
  let runs = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  do {
    await tokenizer.encode(text, null, {addSpecialTokens: false});
    ++runs;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  } while (elapsed < 1.0 || runs < 3);
  const bytes = Buffer.byteLength(text, 'utf8');
  console.log(JSON.stringify({seconds_per_encode: elapsed / runs, bytes, tokens}));
}

const args = process.argv.slice(2);
const done = args[0] === '--bench' ? bench(args[1], args[2]) : reference(args[0], args[1]);
done.catch((e) => {
  console.error(`tokenizer_reference.js: ${e.stack || e}`);
  process.exit(1);
});
