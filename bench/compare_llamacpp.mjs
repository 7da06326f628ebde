// compare_llamacpp.mjs: the llama.cpp side of the side-by-side benchmark.
// Times, through node-llama-cpp (prebuilt CPU binaries, no GPU), a prefill of
// P random tokens and then D single-token decode steps (each computes the
// logits and samples greedily, as a generation loop would), on each model
// given, with the given thread count. Prints one JSON object per model.
//
//   node compare_llamacpp.mjs --threads 2 --prefill 512 --decode 128 MODEL.gguf...
import {getLlama} from "node-llama-cpp";

const args = process.argv.slice(2);
let threads = 2, prefill = 512, decode = 128;
const models = [];
for (let i = 0; i < args.length; i++) {
    if (args[i] === "--threads") threads = Number(args[++i]);
    else if (args[i] === "--prefill") prefill = Number(args[++i]);
    else if (args[i] === "--decode") decode = Number(args[++i]);
    else models.push(args[i]);
}

const llama = await getLlama({gpu: false, build: "never"});
for (const modelPath of models) {
    const model = await llama.loadModel({modelPath});
    const context = await model.createContext({
        threads, contextSize: prefill + decode + 64, batchSize: Math.max(prefill, 1), sequences: 1,
    });
    const sequence = context.getSequence();
    // deterministic pseudo-random prompt (ordinary text tokens, away from the specials)
    const prompt = [];
    let s = 12345;
    for (let i = 0; i < prefill; i++) {
        s = (s * 1103515245 + 12345) % 2147483648;
        prompt.push(1000 + (s % 90000));
    }
    const gen = sequence.evaluate(prompt, {temperature: 0});
    let t0 = performance.now();
    await gen.next();                    // prefill + the first sampled token
    const prefillS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    for (let i = 0; i < decode; i++) await gen.next();
    const decodeS = (performance.now() - t0) / 1000;
    await gen.return();
    console.log(JSON.stringify({
        engine: "llama.cpp (node-llama-cpp 3.22.1)", model: modelPath, threads,
        prefill, prefill_tok_s: prefill / prefillS, decode, decode_tok_s: decode / decodeS,
    }));
    await context.dispose();
    await model.dispose();
}
