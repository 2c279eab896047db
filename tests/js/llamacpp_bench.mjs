// llama.cpp's speed on a GGUF through node-llama-cpp (prebuilt CPU library, offline), measured
// like llama-bench: prompt processing of `pp` random token ids in one batch, and generation of
// `tg` tokens one at a time from an empty context, each after a warm-up, at each thread count.
// node-llama-cpp exposes no timings of its own, so both are timed here around the calls (the
// generation loop includes node-llama-cpp's greedy sampling of each token).
//
// usage: node llamacpp_bench.mjs FILE.gguf [--threads 1,2] [--pp 512] [--tg 128] [--reps 3]
// stdout: a JSON array, one object per case:
//   {"phase": "prompt" | "decode", "tokens": N, "threads": T, "tokens_per_s": X, "seconds": S}

import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const args = process.argv.slice(2);
const option = (name, fallback) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : fallback;
};
const modelPath = args[0];
const threadCounts = option("threads", "1,2").split(",").map(Number);
const pp = Number(option("pp", "512"));
const tg = Number(option("tg", "128"));
const reps = Number(option("reps", "3"));

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath});
const vocabSize = model.fileInfo.metadata.tokenizer.ggml.tokens.length;

// A fixed pseudo-random prompt (the same every run).
let state = 12345;
const prompt = Array.from({length: pp}, () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % vocabSize;
});

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = [];
for (const threads of threadCounts) {
    const context = await model.createContext({
        contextSize: Math.max(pp, tg) + 64, batchSize: pp, threads, sequences: 1});
    const sequence = context.getSequence();

    const promptSeconds = [];
    for (let rep = 0; rep <= reps; ++rep) {  // rep 0 warms up
        await sequence.clearHistory();
        const start = performance.now();
        await sequence.evaluateWithoutGeneratingNewTokens(prompt);
        if (rep > 0) promptSeconds.push((performance.now() - start) / 1000);
    }
    const pSeconds = median(promptSeconds);
    results.push({phase: "prompt", tokens: pp, threads, tokens_per_s: pp / pSeconds, seconds: pSeconds});

    const decodeSeconds = [];
    for (let rep = 0; rep <= reps; ++rep) {
        await sequence.clearHistory();
        const start = performance.now();
        let generated = 0;
        // One token in, then one decode per generated token: `tg` decodes in all.
        for await (const token of sequence.evaluate([prompt[0]], {temperature: 0})) {
            void token;
            if (++generated >= tg) break;
        }
        if (rep > 0) decodeSeconds.push((performance.now() - start) / 1000);
    }
    const dSeconds = median(decodeSeconds);
    results.push({phase: "decode", tokens: tg, threads, tokens_per_s: tg / dSeconds, seconds: dSeconds});
    await context.dispose();
}
process.stdout.write(JSON.stringify(results) + "\n");
await model.dispose();
await llama.dispose();
