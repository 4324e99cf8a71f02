"""Drives a running mlx-lm-server with the official `openai` and `anthropic` clients.

Usage: server_clients.py CASES.json. The file holds the server's base URL and the
expected greedy texts (computed by the Rust test with mlx_lm::generate for the same prompt
tokens); every check is an assert, and the script prints one line per check it passed.
"""

import json
import sys

import anthropic
import openai

cases = json.load(open(sys.argv[1]))
base = cases["base"]
oa = openai.OpenAI(base_url=base + "/v1", api_key="sekrit", max_retries=0)
an = anthropic.Anthropic(base_url=base, api_key="sekrit", max_retries=0)
model = "test-model"


def check(name, cond, detail=""):
    assert cond, f"{name}: {detail}"
    print("ok", name)


# Chat, whole and streamed.
c = cases["chat"]
r = oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=c["max_tokens"])
check("openai chat text", r.choices[0].message.content == c["expected"], repr(r.choices[0].message.content))
check("openai chat usage", r.usage.prompt_tokens == c["prompt_tokens"] and r.usage.completion_tokens > 0, r.usage)
check("openai chat finish", r.choices[0].finish_reason in ("stop", "length"), r.choices[0].finish_reason)
text = ""
finish = None
usage = None
for chunk in oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=c["max_tokens"],
                                        stream=True, stream_options={"include_usage": True}):
    if chunk.usage is not None:
        usage = chunk.usage
    for ch in chunk.choices:
        text += ch.delta.content or ""
        finish = ch.finish_reason or finish
check("openai chat stream text", text == c["expected"], repr(text))
check("openai chat stream finish", finish == r.choices[0].finish_reason, finish)
check("openai chat stream usage", usage is not None and usage.completion_tokens == r.usage.completion_tokens, usage)

# Logprobs.
r = oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=8, logprobs=True, top_logprobs=2)
lp = r.choices[0].logprobs.content
check("openai logprobs", len(lp) > 0 and all(len(t.top_logprobs) == 2 and t.top_logprobs[0].token == t.token for t in lp))

# Completions and stop strings.
p = cases["completion"]
r = oa.completions.create(model=model, prompt=p["prompt"], max_tokens=p["max_tokens"])
check("openai completion text", r.choices[0].text == p["expected"], repr(r.choices[0].text))
r = oa.completions.create(model=model, prompt=p["prompt"], max_tokens=p["max_tokens"], stop=[p["stop"]])
check("openai completion stop", r.choices[0].text == p["expected_stop"] and r.choices[0].finish_reason == "stop",
      repr(r.choices[0].text))
text = "".join(ch.choices[0].text for ch in oa.completions.create(
    model=model, prompt=p["prompt"], max_tokens=p["max_tokens"], stop=p["stop"], stream=True) if ch.choices)
check("openai completion stream stop", text == p["expected_stop"], repr(text))

# Seeded sampling is reproducible.
a = oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=12, temperature=0.9, seed=7)
b = oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=12, temperature=0.9, seed=7)
check("openai seed", a.choices[0].message.content == b.choices[0].message.content)

# Errors come back as the clients' exception types.
try:
    oa.chat.completions.create(model="no-such-model", messages=c["messages"])
    check("openai unknown model", False, "no error")
except openai.NotFoundError as e:
    check("openai unknown model", e.status_code == 404 and e.body["code"] == "model_not_found", e.body)
try:
    oa.chat.completions.create(model=model, messages=c["messages"], n=3)
    check("openai n", False, "no error")
except openai.BadRequestError as e:
    check("openai n", e.body["param"] == "n", e.body)
bad = openai.OpenAI(base_url=base + "/v1", api_key="wrong", max_retries=0)
try:
    bad.models.list()
    check("openai api key", False, "no error")
except openai.AuthenticationError:
    check("openai api key", True)
check("openai models", [m.id for m in oa.models.list()] == [model])

# Anthropic Messages, whole and streamed.
m = cases["messages"]
r = an.messages.create(model=model, max_tokens=m["max_tokens"], system=m["system"], messages=m["messages"])
check("anthropic text", r.content[0].text == m["expected"], repr(r.content[0].text))
check("anthropic usage", r.usage.input_tokens == m["prompt_tokens"], r.usage)
check("anthropic stop reason", r.stop_reason in ("end_turn", "max_tokens"), r.stop_reason)
with an.messages.stream(model=model, max_tokens=m["max_tokens"], system=m["system"], messages=m["messages"]) as s:
    text = "".join(s.text_stream)
    final = s.get_final_message()
check("anthropic stream text", text == m["expected"] and final.content[0].text == m["expected"], repr(text))
check("anthropic stream stop reason", final.stop_reason == r.stop_reason, final.stop_reason)
r = an.messages.create(model=model, max_tokens=m["max_tokens"], system=m["system"], messages=m["messages"],
                       stop_sequences=[m["stop"]])
check("anthropic stop sequence", r.content[0].text == m["expected_stop"] and r.stop_reason == "stop_sequence"
      and r.stop_sequence == m["stop"], r)
try:
    an.messages.create(model="claude-nothing", max_tokens=4, messages=m["messages"])
    check("anthropic unknown model", False, "no error")
except anthropic.NotFoundError as e:
    check("anthropic unknown model", e.body["type"] == "error" and e.body["error"]["type"] == "not_found_error", e.body)
