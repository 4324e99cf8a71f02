#!/usr/bin/env python3
"""Tool-call parsing reference data: what mlx_lm 0.32.2's server makes of generated text.

Writes `tests/data/lm/tool_parsers.json` (no arrays: the same on every device):

- `streams`: for each format (`mlx_lm.tool_parsers.<name>`) and model output, the text run
  through the server's own pipeline: `make_text_state_machine` (tool-call markers, and
  `<think>` markers where a case says so), `TextStateMachine.split` per text piece, then
  `discard` (finish_reason "stop") or `flush` ("length"), with each tool call's text handed to
  the format's `parse_tool_call` when its end marker (or the end) is reached, exactly where
  `server.py` does. The pieces: the whole text, every split in two (at each character), and
  one character at a time. Each piece's events are recorded: content, reasoning, a parsed
  call (name, arguments, id), or an invalid call (one `ToolCallFormatter` drops with a warning,
  and one on which the server would crash: a result without `name` / `arguments`, not a
  dict, or arguments `json.dumps` cannot write).
- `selection`: `tokenizer_utils._infer_tool_parser` on chat templates and vocabularies.

Run: scripts/gen-golden tool_parsers
"""
import importlib
import json
import pathlib
import sys
import types

# This folder's random.py would shadow the standard library's, which mlx_lm's imports need.
HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

from mlx_lm.generate import TextStateMachine, make_text_state_machine
from mlx_lm.tokenizer_utils import _infer_tool_parser
import mlx_lm

assert mlx_lm.__version__ == "0.32.2", mlx_lm.__version__

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "temp": {"type": "number"},
                    "metric": {"type": "boolean"},
                    "opts": {"type": "object"},
                    "tags": {"type": "array"},
                    "pair": {"type": "tuple"},
                    "notype": {"description": "no type"},
                },
            },
        },
    }
]

# (format, text, tools, thinking)
CASES = [
    ("json_tools", 'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>', None, False),
    ("json_tools", '<tool_call>{"name":"a","arguments":{}}</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": [1, 2.5, null, true]}}</tool_call> done', None, False),
    ("json_tools", '<tool_call>{"name": "a", "arguments": {</tool_call>after', None, False),
    ("json_tools", '<tool_call>{"name": "a"}</tool_call>', None, False),
    ("json_tools", 'text <tool_call>{"name": "a", "arguments": {"q": 1}}', None, False),
    ("json_tools", "Hello <tool_ca", None, False),
    ("json_tools", "a < b and <tool> x </tool_call> <<tool_call>", None, False),
    ("json_tools", '<tool_call>[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": "v"}, "id": "x1"}]</tool_call>', None, False),
    ("json_tools", 'Wetter für Köln: <tool_call>{"name": "w", "arguments": {"stadt": "Köln ☀"}}</tool_call>', None, False),
    ("json_tools", "<tool_call></tool_call>x", None, False),
    ("json_tools", '<tool_call><tool_call>{"name": "a", "arguments": 1}</tool_call></tool_call>', None, False),
    ("json_tools", '<think>I should call <tool_call>.</think>no', None, True),
    ("json_tools", '<think>Plan.</think>Ok.<tool_call>{"name":"a","arguments":{"n":-1e3}}</tool_call>', None, True),
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123XYZ"}]', None, False),
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', None, False),
    ("mistral", 'I will call. [TOOL_CALLS]a[ARGS]{"x": 1}b[ARGS] {"y": [2]}', None, False),
    ("mistral", '[TOOL_CALLS]a[ARGS]{"x": ', None, False),
    ("mistral", "[TOOL_CALLS][1, 2]", None, False),
    ("mistral", '[TOOL_CALLS][{"name": "f", "arguments": "{\\"a\\": 1}"}]', None, False),
    ("mistral", "No calls [TOOL here.", None, False),
    ("mistral", "[TOOL_CALLS]hello", None, False),
    ("pythonic", '<|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>Checking.', None, False),
    ("pythonic", "<|tool_call_start|>[a(x=[1, 2], y={\"k\": true, \"n\": null}), b.c(z='s\\'q', w=-1.5e3)]<|tool_call_end|>", None, False),
    ("pythonic", '<|tool_call_start|>[search(query="a b", limit=5, flag=yes)]<|tool_call_end|>', None, False),
    ("pythonic", "<|tool_call_start|>[f(1, x=2)]<|tool_call_end|>", None, False),
    ("pythonic", "<|tool_call_start|>nothing here<|tool_call_end|>", None, False),
    ("pythonic", '<|tool_call_start|>[f(a=True, b=None, c=(1, 2), d="""tri\nple""", e=0x1F, f="a" "b")]<|tool_call_end|>', None, False),
    ("pythonic", '<|tool_call_start|>[f(a="3", b=x, c=\'q\')]<|tool_call_end|>', None, False),
    ("pythonic", '<|tool_call_start|>[f(a="unterminated)]', None, False),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>", WEATHER_TOOLS, False),
    ("qwen3_coder", "Let me look.\n<tool_call>\n<function=get_weather>\n<parameter=temp>\n21.5\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=opts>\n{\"a\": 1}\n</parameter>\n<parameter=tags>\n[1, 2]\n</parameter>\n<parameter=pair>\n(1, 'x')\n</parameter>\n<parameter=notype>\n{\"z\": 2}\n</parameter>\n<parameter=extra>\n7\n</parameter>\n</function>\n</tool_call>", WEATHER_TOOLS, False),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=days>\n3.5\n</parameter>\n</function>\n</tool_call>", WEATHER_TOOLS, False),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nnull\n</parameter>\n<parameter=temp>\n20.0\n</parameter>\n</function>\n</tool_call>", WEATHER_TOOLS, False),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>", WEATHER_TOOLS, False),
    ("qwen3_coder", "<tool_call>\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=b>\n</function>\n</tool_call>", None, False),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=days>\n4\n</parameter>\n</function>", WEATHER_TOOLS, False),
]


def fake_tokenizer(mod, thinking):
    return types.SimpleNamespace(
        has_thinking=thinking,
        think_start="<think>",
        think_end="</think>",
        has_tool_calling=True,
        tool_call_start=mod.tool_call_start,
        tool_call_end=mod.tool_call_end,
        response_transitions={},
        structural_markers=(),
    )


def parse(mod, text, tools):
    """The events one tool call's text gives, as server.py's ToolCallFormatter sees it."""
    try:
        parsed = mod.parse_tool_call(text, tools)
    except (ValueError, json.JSONDecodeError):
        # The formatter logs a warning and drops the call.
        return [["invalid", "dropped"]]
    except Exception:
        return [["invalid", "crash"]]
    calls = parsed if isinstance(parsed, list) else [parsed]
    out = []
    for tc in calls:
        if not isinstance(tc, dict) or "name" not in tc or "arguments" not in tc:
            return [["invalid", "crash"]]
        try:
            arguments = json.loads(json.dumps(tc["arguments"], ensure_ascii=False))
        except (TypeError, ValueError):
            return [["invalid", "crash"]]
        if not isinstance(tc["name"], str):
            return [["invalid", "crash"]]
        tc_id = tc.get("id")
        out.append(["call", {"name": tc["name"], "arguments": arguments,
                             "id": tc_id if isinstance(tc_id, str) else None}])
    return out


def run(mod, pieces, finish, tools, thinking):
    sm = make_text_state_machine(fake_tokenizer(mod, thinking))
    state = sm.make_state("normal")
    ctx = {"prev": "normal", "tool_text": ""}

    def segments_events(segments):
        events = []
        for current, text in segments:
            if current == "reasoning":
                if text:
                    events.append(["reasoning", text])
            elif current == "tool":
                ctx["tool_text"] += text
            elif current == "normal":
                if ctx["prev"] == "tool":
                    events += parse(mod, ctx["tool_text"], tools)
                    ctx["tool_text"] = ""
                if text:
                    events.append(["content", text])
            ctx["prev"] = current
        return events

    steps = []
    for piece in pieces:
        state, segments = TextStateMachine.split(state, piece)
        steps.append(segments_events(segments))
    if finish == "stop":
        state, current = TextStateMachine.discard(state)
        segments = [(current, "")]
    else:
        state, segments = TextStateMachine.split(state, "")
        state, flushed, current = TextStateMachine.flush(state)
        segments.append((current, flushed))
    events = segments_events(segments)
    if ctx["prev"] == "tool" and ctx["tool_text"]:
        events += parse(mod, ctx["tool_text"], tools)
    steps.append(events)
    return steps


def streams():
    out = []
    for name, text, tools, thinking in CASES:
        mod = importlib.import_module(f"mlx_lm.tool_parsers.{name}")
        for finish in ("stop", "length"):
            case = {"parser": name, "text": text, "tools": tools, "thinking": thinking,
                    "finish": finish,
                    "whole": run(mod, [text], finish, tools, thinking),
                    "chars": run(mod, list(text), finish, tools, thinking),
                    "splits": [run(mod, [text[:i], text[i:]], finish, tools, thinking)
                               for i in range(len(text) + 1)]}
            out.append(case)
    return out


def selection():
    qwen = "{%- for tool_call in message.tool_calls %}<tool_call>\\n{\"name\": \"{{ tool_call.name }}\"}</tool_call>{%- endfor %}"
    templates = [
        ("qwen", qwen, []),
        ("qwen3_coder", "{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}", []),
        ("mistral", "{{- '[TOOL_CALLS]' + tool_calls|tojson }}", []),
        ("lfm2", "<|tool_list_start|>{{ tools }}<|tool_list_end|>", []),
        ("lfm2-vocab", "{{ messages }}", ["<|tool_call_start|>", "<|tool_call_end|>"]),
        ("pythonic-one-token", "{{ messages }}", ["<|tool_call_start|>"]),
        ("kimi", "<|tool_calls_section_begin|>", []),
        ("kimi-k3-vocab", None, ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"]),
        ("gemma4", "<|tool_call>call<tool_call|>", []),
        ("gemma4-half", "<|tool_call> only", []),
        ("function_gemma", "<start_function_call>", []),
        ("glm", "<arg_key>k</arg_key>", []),
        ("minimax", "<minimax:tool_call>", []),
        ("longcat", "<longcat_tool_call>", []),
        ("minicpm5", "<function name=\"f\"><param name=\"p\">", []),
        ("muse", "<atem:function_calls>", []),
        ("chatml", "{% for message in messages %}<|im_start|>{{ message.content }}{% endfor %}", []),
        ("tool_call-without-name", "<tool_call>{{ x }}</tool_call>", []),
        ("order-mistral-and-json", "[TOOL_CALLS] <tool_call> tool_call.name", []),
        ("none", None, []),
    ]
    out = []
    for label, template, vocab in templates:
        tok = types.SimpleNamespace(chat_template=template,
                                    get_vocab=lambda v=vocab: {t: i for i, t in enumerate(v)})
        out.append({"label": label, "template": template, "vocab": vocab,
                    "parser": _infer_tool_parser(tok)})
    return out


def main():
    data = {"streams": streams(), "selection": selection()}
    path = ROOT / "tests" / "data" / "lm" / "tool_parsers.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes, {len(data['streams'])} streams)")


if __name__ == "__main__":
    main()
