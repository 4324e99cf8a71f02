#!/usr/bin/env python3
"""Synthetic fine-tuning data in mlx_lm's JSONL formats (train/valid/test.jsonl).

    bench/lora/make_data.py json  --out DIR [--train N] [--seed S]
    bench/lora/make_data.py bench --out DIR --tokenizer MODEL_DIR --seq-len L [--train N]

`json`: a sentence about a person to a JSON record, as prompt/completion pairs:
    {"prompt": "alice is 31 and lives in paris", "completion": "{\"name\": \"alice\", \"age\": 31, \"city\": \"paris\"}"}
The sentence comes in one of three phrasings, so the model must find the three values in it
(copy them, in the record's fixed order) rather than echo the prompt. The test split holds
name/city pairs that no training record has, so a model that gets them right has learned the
format, not memorized the answers.

`bench`: train.jsonl alone (no validation), text records of random words, each just under L
tokens with the given tokenizer, so that every batch is padded to the same width (mlx_lm pads
to one more than a multiple of 32) and the compiled training step is traced once; bench.json
records that width.
"""
import argparse
import json
import pathlib
import random

NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter",
         "yara"]
CITIES = ["paris", "oslo", "lima", "cairo", "tokyo", "quito", "rome", "delhi", "seoul",
          "dakar", "perth", "bern", "kyiv", "hanoi", "accra", "riga"]
PHRASES = [
    "{name} is {age} and lives in {city}",
    "{name} lives in {city}, aged {age}",
    "in {city} lives {name}, {age} years old",
]


def person(rng, name, city):
    age = rng.randint(18, 89)
    prompt = rng.choice(PHRASES).format(name=name, age=age, city=city)
    completion = json.dumps({"name": name, "age": age, "city": city})
    return {"prompt": prompt, "completion": completion}


def json_task(out, n_train, seed):
    rng = random.Random(seed)
    pairs = [(n, c) for n in NAMES for c in CITIES]
    rng.shuffle(pairs)
    # A tenth of the name/city pairs only in the test split.
    held = set(pairs[: len(pairs) // 10])
    seen = [p for p in pairs if p not in held]
    splits = {
        "train": [person(rng, *rng.choice(seen)) for _ in range(n_train)],
        "valid": [person(rng, *rng.choice(seen)) for _ in range(max(n_train // 10, 8))],
        "test": [person(rng, *p) for p in sorted(held)],
    }
    return splits


def bench_task(out, n_train, seed, tokenizer_dir, seq_len):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    rng = random.Random(seed)
    words = NAMES + CITIES + ["is", "and", "lives", "in", "aged", "years", "old", "the"]
    # Padded width 1 + 32 * ceil(len / 32): records of seq_len - 31 .. seq_len tokens (the end
    # token included) all pad to seq_len + 1 when seq_len is a multiple of 32.
    assert seq_len % 32 == 0 and seq_len >= 64, "--seq-len: a multiple of 32, at least 64"
    low = seq_len - 24

    def record():
        text = []
        while True:
            text.append(rng.choice(words))
            # The tokenizer's ids and the end token mlx_lm appends.
            n = len(tok.encode(" ".join(text))) + 1
            if n >= low:
                if n > seq_len:
                    text.pop()
                    continue
                return {"text": " ".join(text)}

    # No valid.jsonl: no validation, so the runs time training alone.
    (out / "bench.json").write_text(json.dumps({"seq_len": seq_len, "batch_width": seq_len + 1}))
    return {"train": [record() for _ in range(n_train)]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=["json", "bench"])
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=None, help="training records")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokenizer", help="bench: a model folder with the tokenizer")
    p.add_argument("--seq-len", type=int, default=256, help="bench: padded width - 1")
    a = p.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.task == "json":
        splits = json_task(out, a.train or 2000, a.seed)
    else:
        if not a.tokenizer:
            p.error("bench needs --tokenizer")
        splits = bench_task(out, a.train or 64, a.seed, a.tokenizer, a.seq_len)
    for name, records in splits.items():
        with open(out / f"{name}.jsonl", "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(f"wrote {out}: " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()))


if __name__ == "__main__":
    main()
