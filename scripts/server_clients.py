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
# The prompt was seen before: all but its last token come from the prompt cache.
r = oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=c["max_tokens"])
check("openai cached tokens", r.usage.prompt_tokens_details.cached_tokens == c["prompt_tokens"] - 1
      and r.choices[0].message.content == c["expected"], r.usage)

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

# Tool calls, forced (the test model has random weights: it calls a tool only when made to).
import jsonschema
import pydantic

t = openai.OpenAI(base_url=cases["tools_base"] + "/v1", api_key="sekrit", max_retries=0)
weather = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 6},
        "days": {"type": "integer", "minimum": 1, "maximum": 9},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather", "parameters": weather}}]
ask = [{"role": "user", "content": "Weather in Oslo?"}]
forced = {"type": "function", "function": {"name": "get_weather"}}
r = t.chat.completions.create(model=model, messages=ask, tools=tools, tool_choice=forced, max_tokens=100)
calls = r.choices[0].message.tool_calls
check("openai tool call", r.choices[0].finish_reason == "tool_calls" and len(calls) == 1
      and calls[0].function.name == "get_weather", r)
args = json.loads(calls[0].function.arguments)
jsonschema.validate(args, weather)
check("openai tool call arguments validate", True)
# The client's stream helper assembles the deltas into the same call.
with t.chat.completions.stream(model=model, messages=ask, tools=tools, tool_choice=forced, max_tokens=100) as s:
    final = s.get_final_completion()
sc = final.choices[0].message.tool_calls
check("openai streamed tool call", final.choices[0].finish_reason == "tool_calls" and len(sc) == 1
      and sc[0].function.name == "get_weather" and json.loads(sc[0].function.arguments) == args, final)
# The call and its result back in the conversation.
follow = ask + [r.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": calls[0].id, "content": "sunny"}]
r = t.chat.completions.create(model=model, messages=follow, tools=tools, max_tokens=8)
check("openai tool result turn", r.choices[0].finish_reason in ("stop", "length") and r.usage.prompt_tokens > 0, r)

# Structured output: a JSON schema, and the client's pydantic parse.
person = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 99}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
r = oa.chat.completions.create(model=model, messages=c["messages"], max_tokens=100, response_format={
    "type": "json_schema", "json_schema": {"name": "person", "schema": person, "strict": True}})
jsonschema.validate(json.loads(r.choices[0].message.content), person)
check("openai json_schema validates", r.choices[0].finish_reason == "stop", r)


class Point(pydantic.BaseModel):
    x: int = pydantic.Field(ge=0, le=9)
    y: int = pydantic.Field(ge=0, le=9)
    label: str = pydantic.Field(max_length=4)


r = oa.chat.completions.parse(model=model, messages=c["messages"], max_tokens=100, response_format=Point)
check("openai parse pydantic", isinstance(r.choices[0].message.parsed, Point), r)
try:
    oa.chat.completions.create(model=model, messages=c["messages"], response_format={
        "type": "json_schema", "json_schema": {"name": "bad", "strict": True,
                                               "schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}})
    check("openai invalid schema", False, "no error")
except openai.BadRequestError as e:
    check("openai invalid schema", e.body["param"] == "response_format", e.body)

# Anthropic: forced tool use, whole and streamed.
ta = anthropic.Anthropic(base_url=cases["tools_base"], api_key="sekrit", max_retries=0)
a_tools = [{"name": "get_weather", "description": "The weather", "input_schema": weather}]
r = ta.messages.create(model=model, max_tokens=100, messages=ask, tools=a_tools,
                       tool_choice={"type": "tool", "name": "get_weather"})
check("anthropic tool use", r.stop_reason == "tool_use" and r.content[0].type == "tool_use"
      and r.content[0].name == "get_weather", r)
jsonschema.validate(r.content[0].input, weather)
check("anthropic tool input validates", True)
with ta.messages.stream(model=model, max_tokens=100, messages=ask, tools=a_tools,
                        tool_choice={"type": "any", "disable_parallel_tool_use": True}) as s:
    final = s.get_final_message()
check("anthropic streamed tool use", final.stop_reason == "tool_use" and final.content[-1].type == "tool_use"
      and final.content[-1].input == r.content[0].input, final)
r2 = ta.messages.create(model=model, max_tokens=8, tools=a_tools, messages=ask + [
    {"role": "assistant", "content": [b.model_dump() for b in r.content]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": r.content[0].id, "content": "sunny"}]}])
check("anthropic tool result turn", r2.stop_reason in ("end_turn", "max_tokens"), r2)
