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
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "load_common.lua")
setup, response, done = common.setup, common.response, common.done
init = common.init

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
  local r = math.random()
  if r < 0.5 then
    return wrk.format("POST", "/v1/systemone", headers, systemone_body(states[math.random(#states)]))
  end
  return wrk.format("POST", "/generate", headers, generate_body(prompts[math.random(#prompts)], r < 0.75))
end
