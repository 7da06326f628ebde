// openai_check.mjs BASE_URL KEY: OpenAI's official JS SDK (openai 7.55.0)
// pointed at `typellm serve` (baseURL BASE_URL/v1): decisions.create with
// every question type (typed boolean choices, 255 options, 400 questions)
// and its refusals of bad input, chat.completions.create (plain, streamed,
// logprobs, json_schema), completions.create and models.list(). Property
// checks: every probability list sums to 1 within 1e-9, every answer is one of
// the declared options, and a decision's probabilities equal the softmax of
// the engine's own label logprobs (read back through /generate with the
// rendered prompt's ids) within 1e-4. Exits 1 on a failed check.
import OpenAI, { AuthenticationError, BadRequestError, NotFoundError } from "openai";

const [base, apiKey] = process.argv.slice(2);
let checks = 0, failures = 0;
const check = (cond, what) => { checks++; if (!cond) { failures++; console.error("FAIL:", what); } };
const sum = (a) => a.reduce((t, x) => t + x, 0);
const client = new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0 });

const models = await client.models.list();
const model = models.data[0]?.id;
check(typeof model === "string" && models.data[0].object === "model" && Number.isInteger(models.data[0].created),
  "models.list(): OpenAI's list shape");

// Every probability list sums to 1; the answer is a declared option, by type.
function checkAnswer(a, q, where) {
  check(a.type === q.type, `${where}: type ${a.type}`);
  check(a.name === (q.name ?? null), `${where}: name echoed (or null)`);
  check(typeof a.label_mass === "number" && a.label_mass >= 0 && a.label_mass <= 1 + 1e-9, `${where}: label_mass`);
  if (q.type === "predicate") {
    check(a.probability >= 0 && a.probability <= 1, `${where}: probability in [0, 1]`);
    return;
  }
  const ps = a.probabilities.map((p) => p.probability);
  check(Math.abs(sum(ps) - 1) < 1e-9, `${where}: probabilities sum to 1 (${sum(ps)})`);
  check(ps.every((p) => p >= 0 && p <= 1), `${where}: probabilities in [0, 1]`);
  const n = ps.length, max = Math.max(...ps);
  if (q.type === "choice") {
    check(n === q.choices.length && a.probabilities.every((p, i) => p.value === q.choices[i].value),
      `${where}: probabilities in option order, values typed`);
    check(q.choices.some((c) => c.value === a.choice), `${where}: choice ${JSON.stringify(a.choice)} is declared`);
    check(a.probabilities.find((p) => p.value === a.choice).probability === max, `${where}: choice is the argmax`);
    check(Math.abs(a.confidence - (max - 1 / n) / (1 - 1 / n)) < 1e-9, `${where}: confidence formula`);
  } else {
    check(n === q.levels.length && a.probabilities.every((p, i) => p.label === q.levels[i].label && p.value === i),
      `${where}: levels in order, value = index`);
    check(Math.abs(a.score - sum(a.probabilities.map((p) => p.value * p.probability))) < 1e-9, `${where}: score = sum v p`);
    check(a.confidence >= 0 && a.confidence <= 1, `${where}: confidence in [0, 1]`);
  }
}

function checkUsage(u, where) {
  check(Number.isInteger(u.input_tokens) && u.input_tokens > 0, `${where}: input_tokens`);
  check(Number.isInteger(u.input_tokens_details.cached_tokens) && u.input_tokens_details.cached_tokens >= 0,
    `${where}: cached_tokens`);
  check(u.output_tokens === 0 && u.output_tokens_details.reasoning_tokens === 0, `${where}: no output tokens`);
  check(u.total_tokens === u.input_tokens + u.output_tokens, `${where}: total_tokens`);
}

// ---- decisions.create: every question type --------------------------------------
const questions = [
  { type: "predicate", instructions: "Is this ticket about billing?", name: "billing" },
  { type: "predicate", instructions: [{ type: "input_text", text: "Does the customer want money back?" }] },
  { type: "choice", name: "tone", instructions: "What is the tone?",
    choices: [{ value: "calm" }, { value: "angry", description: "raised voice, blame" }, { value: "frustrated" }] },
  { type: "choice", name: "typed", instructions: "Is it resolved?",
    choices: [{ value: true }, { value: false }, { value: "true", description: "the text 'true'" }] },
  { type: "choice", name: "bools", instructions: "Is it a duplicate charge?", choices: [{ value: false }, { value: true }] },
  { type: "score", name: "urgency", instructions: "How urgent is it?",
    levels: [{ label: "can wait" }, { label: "this week", description: "soon" }, { label: "today" }] },
];
const input = [
  { role: "system", content: "You triage support tickets." },
  { role: "user", content: [{ type: "input_text", text: "I was charged twice for my plan. Please refund one charge today." },
    { type: "input_json", data: { customer: "ACME", plan: "pro" } }] },
];
const d = await client.decisions.create({ model, input, questions });
check(d.model === model, "decision names the model");
check(d.answers.length === questions.length, "one answer per question, in order");
d.answers.forEach((a, i) => checkAnswer(a, questions[i], `decisions[${i}]`));
checkUsage(d.usage, "decisions usage");
check(typeof d.answers[3].probabilities[0].value === "boolean" && typeof d.answers[3].probabilities[2].value === "string",
  "a string and a boolean with the same text stay distinct");

// Independence: a question alone gets the answer it gets among others.
const alone = await client.decisions.create({ model, input, questions: [questions[2]] });
check(alone.answers[0].probabilities.every((p, i) => Math.abs(p.probability - d.answers[2].probabilities[i].probability) < 1e-6),
  "questions are independent (same answer alone as in a batch)");

// The softmax of the engine's own label logprobs, read back through /generate.
const traced = await client.decisions.create({ model, input: "Refund please.", questions, return_prompt_token_ids: true });
for (const [i, a] of traced.answers.entries()) {
  const r = await fetch(`${base}/generate`, {
    method: "POST", headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ input_ids: a.prompt_token_ids, sampling_params: { max_new_tokens: 1, temperature: 0 },
      return_logprob: true, token_ids_logprob: a.label_token_ids }),
  }).then((x) => x.json());
  const lps = r.meta_info.output_token_ids_logprobs[0].map((t) => t[0]);
  const m = Math.max(...lps), z = sum(lps.map((l) => Math.exp(l - m)));
  const soft = lps.map((l) => Math.exp(l - m) / z);
  const got = a.type === "predicate" ? [a.probability, 1 - a.probability] : a.probabilities.map((p) => p.probability);
  const want = soft;
  check(got.length === want.length && got.every((p, k) => Math.abs(p - want[k]) < 1e-4),
    `decisions[${i}]: probabilities = softmax of the engine's label logprobs (${got} vs ${want})`);
  const mass = sum(lps.map((l) => Math.exp(l)));
  check(Math.abs(a.label_mass - mass) < 1e-4 * Math.max(mass, 1e-12) + 1e-12, `decisions[${i}]: label_mass = sum of label probabilities`);
}

// 255 options, 400 questions.
const many = Array.from({ length: 255 }, (_, i) => ({ value: `option ${i}` }));
const big = await client.decisions.create({ model, input: "x", questions: [{ type: "choice", instructions: "Which?", choices: many }] });
checkAnswer(big.answers[0], { type: "choice", choices: many }, "255 options");
const q400 = Array.from({ length: 400 }, (_, i) => ({ type: "predicate", instructions: `Is statement ${i} true?`, name: `q${i}` }));
const r400 = await client.decisions.create({ model, input: "A short ticket.", questions: q400 });
check(r400.answers.length === 400 && r400.answers.every((a, i) => a.name === `q${i}`), "400 questions answered in order");

// Reuse: a repeat of a request reads its input from the cache.
const first = await client.decisions.create({ model, input: "A fresh input for the cache check " + Date.now(), questions: questions.slice(0, 4) });
const again = await client.decisions.create({ model, input: "A fresh input for the cache check " + first.usage.input_tokens, questions: questions.slice(0, 1) });
void again;
const repeat = await client.decisions.create({ model, input, questions });
check(repeat.usage.input_tokens_details.cached_tokens > d.usage.input_tokens_details.cached_tokens,
  `a repeat call reuses the cache (${repeat.usage.input_tokens_details.cached_tokens} > ${d.usage.input_tokens_details.cached_tokens})`);

// Refusals, typed by the SDK.
async function refused(body, cls, status, param, what) {
  try {
    await client.decisions.create(body);
    check(false, `${what}: must be refused`);
  } catch (e) {
    check(e instanceof cls && e.status === status, `${what}: ${cls.name} ${status} (${e})`);
    if (param !== undefined) check(e.param === param, `${what}: param ${e.param} names ${param}`);
    check(typeof e.error?.message === "string" && "type" in e.error && "code" in e.error, `${what}: OpenAI error shape`);
  }
}
const pq = [{ type: "predicate", instructions: "?" }];
await refused({ model, input: [{ role: "user", content: [{ type: "input_image", image_url: "https://x/y.png" }] }], questions: pq },
  BadRequestError, 400, "input[0].content[0]", "image part");
await refused({ model, input: "x", questions: [{ type: "choice", instructions: "?", choices: [{ value: "a" }] }] },
  BadRequestError, 400, "questions[0].choices", "one choice");
await refused({ model, input: "x", questions: [{ type: "choice", instructions: "?", choices: [{ value: "a" }, { value: "a" }] }] },
  BadRequestError, 400, "questions[0].choices[1]", "duplicate choice");
await refused({ model, input: "x", questions: Array.from({ length: 401 }, () => pq[0]) }, BadRequestError, 400, "questions", "401 questions");
await refused({ model, input: "x", questions: [] }, BadRequestError, 400, "questions", "no questions");
await refused({ model, input: "x", questions: [{ type: "predicate" }] }, BadRequestError, 400, "questions[0].instructions", "no instructions");
await refused({ model, input: "x", questions: [{ type: "predicate", instructions: "?", colour: 1 }] },
  BadRequestError, 400, "questions[0].colour", "unknown question field");
await refused({ model: "gpt-6-luna", input: "x", questions: pq }, NotFoundError, 404, "model", "unknown model");
await refused({ model, input: [{ type: "function_call_output", call_id: "c1", output: "42" }], questions: pq },
  BadRequestError, 400, "input[0].call_id", "tool output without its call");
const fc = await client.decisions.create({ model, questions: pq, input: [
  { role: "user", content: "What is 6 x 7?" },
  { type: "function_call", call_id: "c1", name: "mul", arguments: "{\"a\":6,\"b\":7}" },
  { type: "function_call_output", call_id: "c1", output: "42" }] });
check(fc.answers.length === 1, "function call items are accepted");
try {
  await new OpenAI({ apiKey: "wrong", baseURL: `${base}/v1`, maxRetries: 0 }).decisions.create({ model, input: "x", questions: pq });
  check(false, "bad key must throw");
} catch (e) { check(e instanceof AuthenticationError && e.status === 401, `bad key -> AuthenticationError (${e})`); }

// ---- chat.completions --------------------------------------------------------------
const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
check(chat.object === "chat.completion" && chat.choices.length === 1, "chat: one choice");
const c0 = chat.choices[0];
check(c0.message.role === "assistant" && typeof c0.message.content === "string", "chat: assistant message");
check(["stop", "length"].includes(c0.finish_reason), "chat: finish_reason");
check(chat.usage.prompt_tokens > 0 && chat.usage.completion_tokens > 0 && chat.usage.completion_tokens <= 8 &&
  chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens &&
  Number.isInteger(chat.usage.prompt_tokens_details.cached_tokens), "chat: usage with cached tokens");

const stream = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, stream: true,
  stream_options: { include_usage: true } });
let streamed = "", finish = null, usage = null, chunks = 0;
for await (const ch of stream) {
  chunks++;
  if (ch.usage) usage = ch.usage;
  for (const c of ch.choices) { streamed += c.delta.content ?? ""; finish = c.finish_reason ?? finish; }
}
check(chunks >= 2 && streamed === c0.message.content, `chat stream: chunks rebuild the same greedy text (${JSON.stringify(streamed)})`);
check(finish === c0.finish_reason && usage?.completion_tokens === chat.usage.completion_tokens, "chat stream: finish_reason and usage");

const lp = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3 });
const content = lp.choices[0].logprobs.content;
check(content.length === lp.usage.completion_tokens, "chat logprobs: one entry per token");
check(content.every((e) => e.top_logprobs.length === 3 && e.logprob <= 0 && Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-9),
  "chat logprobs: greedy token is the top-1, three alternatives");
check(content.map((e) => e.token).join("") === lp.choices[0].message.content, "chat logprobs: tokens spell the content");
check(content.every((e) => Buffer.from(e.bytes).toString("utf8") === e.token || e.token.includes("\ufffd")), "chat logprobs: bytes");

const two = await client.chat.completions.create({ model, messages, max_tokens: 4, n: 2, seed: 7 });
check(two.choices.length === 2 && two.choices[1].index === 1, "chat: n = 2 choices");

const schema = { type: "object", properties: {
  category: { type: "string", enum: ["billing", "technical", "other"] }, refund: { type: "boolean" },
  severity: { type: "integer", enum: [1, 2, 3] } }, required: ["category", "refund", "severity"] };
const js = await client.chat.completions.create({ model, messages: [{ role: "user", content: "I was charged twice." }],
  response_format: { type: "json_schema", json_schema: { name: "triage", schema, strict: true } } });
const val = JSON.parse(js.choices[0].message.content);
check(schema.properties.category.enum.includes(val.category) && typeof val.refund === "boolean" && [1, 2, 3].includes(val.severity),
  `json_schema: the content is valid against the schema (${js.choices[0].message.content})`);
const dist = js.decision.fields.category.probabilities;
check(Math.abs(sum(Object.values(dist)) - 1) < 1e-9, "json_schema: per-field distribution in the decision extension");
try {
  await client.chat.completions.create({ model, messages, response_format: { type: "json_schema",
    json_schema: { name: "x", schema: { type: "object", properties: { note: { type: "string", not: { const: "x" } } } } } } });
  check(false, "a json_schema typellm cannot honour (not) must be refused");
} catch (e) { check(e instanceof BadRequestError && /cannot decide/.test(e.message), `undecidable schema -> 400 (${e})`); }
try {
  await client.chat.completions.create({ model, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x" } }] }] });
  check(false, "image part must be refused");
} catch (e) { check(e instanceof BadRequestError && e.param === "messages[0].content[0]", `chat image -> 400 (${e})`); }

// ---- completions -------------------------------------------------------------------
const comp = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 5, temperature: 0, logprobs: 2 });
check(comp.object === "text_completion" && typeof comp.choices[0].text === "string", "completions: text");
check(comp.choices[0].logprobs.tokens.join("") === comp.choices[0].text && comp.choices[0].logprobs.token_logprobs.length === comp.usage.completion_tokens,
  "completions: logprobs tokens spell the text");
const cs = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 5, temperature: 0, stream: true });
let ctext = "";
for await (const ch of cs) ctext += ch.choices[0]?.text ?? "";
check(ctext === comp.choices[0].text, "completions stream equals the plain reply");
const multi = await client.completions.create({ model, prompt: ["a", "b"], max_tokens: 2, temperature: 0 });
check(multi.choices.length === 2, "completions: a list of prompts");

console.log(`openai_check: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
