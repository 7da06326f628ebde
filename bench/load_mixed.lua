-- load_mixed.lua: wrk script for `typellm serve`: a mix of System One
-- decisions (/v1/systemone, three question types over a few shared states)
-- and SGLang generations (/generate, short greedy and sampled completions).
-- Any non-200 reply is counted and printed at the end (the load test
-- requires zero). Usage: wrk -s bench/load_mixed.lua -t4 -c32 -d60s URL
local states = {
  "Customer: I was charged twice for my subscription this month. Please refund one of the charges.",
  "Customer: the app crashes every time I open the camera screen on my phone since the last update.",
  "Customer: thanks a lot, the replacement arrived yesterday and works perfectly.",
  "Customer: my package has been stuck in transit for three weeks and support does not answer.",
}
local prompts = { "Once upon a time", "The weather today is", "In a small village", "def main():" }
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  errors = 0
  statuses = {}
  n = 0
  math.randomseed(id * 7919 + 17)
end

local function systemone_body(state)
  return string.format([[{"model":"any","state":%q,"questions":{
    "billing":{"type":"noul","instructions":"Is this about billing?"},
    "tone":{"type":"choice","instructions":"Tone of the customer?","criteria":{"calm":null,"angry":"shouting","happy":null}},
    "urgency":{"type":"score","instructions":"How urgent?","criteria":["can wait","this week","today"]}}}]], state)
end

local function generate_body(prompt, sampled)
  if sampled then
    return string.format([[{"text":%q,"sampling_params":{"max_new_tokens":8,"temperature":0.8,"top_p":0.9}}]], prompt)
  end
  return string.format([[{"text":%q,"sampling_params":{"max_new_tokens":8,"temperature":0},"return_logprob":true,"token_ids_logprob":[1,2,3]}]], prompt)
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  n = n + 1
  local r = math.random()
  if r < 0.5 then
    return wrk.format("POST", "/v1/systemone", headers, systemone_body(states[math.random(#states)]))
  end
  return wrk.format("POST", "/generate", headers, generate_body(prompts[math.random(#prompts)], r < 0.75))
end

function response(status, hdrs, body)
  if status ~= 200 then
    errors = errors + 1
    statuses[status] = (statuses[status] or 0) + 1
  end
end

function done(summary, latency, requests)
  local errs = 0
  for _, t in ipairs(threads) do
    errs = errs + t:get("errors")
  end
  io.write(string.format("LOAD requests=%d non200=%d socket_errors=%d timeouts=%d rps=%.2f p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f\n",
    summary.requests, errs, summary.errors.connect + summary.errors.read + summary.errors.write,
    summary.errors.timeout, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000))
end
