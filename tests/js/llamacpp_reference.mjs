// llama.cpp (through node-llama-cpp's prebuilt CPU library, offline) as the reference of the
// model differential tests: loads a GGUF, evaluates each prompt's token ids (no BOS added, the
// tokenizer is not used) and greedily generates `n` tokens.
//
// stdin: {"model": "FILE.gguf", "threads": 1, "top": 8,
//         "prompts": [{"ids": [1, 2, 3], "n": 16}, ...]}
// stdout: {"results": [{"ids": [generated ids],
//                       "top": [[[id, probability], ...] per generated token]}, ...]}
// where "top" lists the `top` most probable next tokens (softmax of the logits, temperature 1)
// before each generated token.

import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const top = request.top ?? 8;

// build: "never" and gpu: false: only the prebuilt CPU binary, nothing downloaded or compiled.
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: request.model});
const longest = Math.max(...request.prompts.map((p) => p.ids.length + p.n));
const context = await model.createContext({
    contextSize: Math.max(64, longest + 1),
    batchSize: Math.max(64, longest + 1),
    threads: request.threads ?? 1,
    sequences: 1,
    // f32 keys and values (llama.cpp's default is f16) and the plain attention path: only float
    // rounding differs from an f32 implementation.
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
    flashAttention: false,
});
const sequence = context.getSequence();

const results = [];
for (const prompt of request.prompts) {
    await sequence.clearHistory();
    const ids = [];
    const probabilities = [];
    if (prompt.n > 0) {
        // Greedy, and on past end-of-generation tokens: dq4 is compared id for id.
        const steps = sequence.evaluateWithMetadata(prompt.ids, {probabilities: true},
            {temperature: 0, yieldEogToken: true});
        for await (const step of steps) {
            ids.push(step.token);
            probabilities.push([...step.probabilities.entries()].slice(0, top));
            if (ids.length >= prompt.n) break;
        }
    }
    results.push({ids, top: probabilities});
}
process.stdout.write(JSON.stringify({results}) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
