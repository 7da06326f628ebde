// chat_template_check.mjs BASE_URL KEY PLAN.json: OpenAI's official JS SDK
// (openai 7.55.0) against `typellm serve`: a chat completion's prompt is the
// chat template's rendering. PLAN.json (written by
// test_openai_chat_template.sh) lists conversations with the ids
// `typellm template` + `typellm tokenize --special` give; each chat completion
// must report that many prompt tokens, and its greedy text must equal what
// /generate continues those very ids with. "raises" lists conversations the
// template refuses: a 400 (BadRequestError) carrying the template's message.
// Exits 1 on a failed check.
import { readFileSync } from "node:fs";
import OpenAI, { BadRequestError } from "openai";

const [base, apiKey, planPath] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
let checks = 0, failures = 0;
const check = (cond, what) => { checks++; if (!cond) { failures++; console.error("FAIL:", what); } };
const client = new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0 });
const model = (await client.models.list()).data[0].id;

for (const c of plan.cases) {
  const body = { model, messages: c.messages, max_tokens: 6, temperature: 0 };
  if (c.kwargs) body.chat_template_kwargs = c.kwargs;
  const chat = await client.chat.completions.create(body);
  check(chat.usage.prompt_tokens === c.ids.length,
    `${c.name}: prompt_tokens ${chat.usage.prompt_tokens}, the template's rendering has ${c.ids.length}`);
  const gen = await fetch(`${base}/generate`, {
    method: "POST", headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ input_ids: c.ids, sampling_params: { max_new_tokens: 6, temperature: 0 } }),
  }).then((r) => r.json());
  check(gen.meta_info.prompt_tokens === c.ids.length, `${c.name}: /generate prompt_tokens`);
  check(chat.choices[0].message.content === gen.text,
    `${c.name}: greedy text ${JSON.stringify(chat.choices[0].message.content)} != /generate on the rendering's ids ${JSON.stringify(gen.text)}`);
  // streamed: the same text
  const stream = await client.chat.completions.create({ ...body, stream: true });
  let text = "";
  for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? "";
  check(text === gen.text, `${c.name}: streamed text`);
}

for (const r of plan.raises ?? []) {
  try {
    await client.chat.completions.create({ model, messages: r.messages, max_tokens: 2 });
    check(false, `raises: accepted ${JSON.stringify(r.messages)}`);
  } catch (e) {
    check(e instanceof BadRequestError && e.status === 400, `raises: status ${e.status}`);
    check(String(e.message).includes(r.message), `raises: message ${e.message}`);
    check(e.param === "messages", `raises: param ${e.param}`);
  }
}
try {
  await client.chat.completions.create({ model, messages: plan.cases[0].messages, chat_template_kwargs: [1] });
  check(false, "chat_template_kwargs [1] accepted");
} catch (e) {
  check(e instanceof BadRequestError && e.param === "chat_template_kwargs", `chat_template_kwargs: ${e.message}`);
}
console.log(`chat_template_check: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
