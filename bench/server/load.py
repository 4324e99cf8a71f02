#!/usr/bin/env python3
"""Streams completions from a running OpenAI-compatible server with C concurrent clients and
prints one JSON line: total completion tokens per second of wall time, time to first token
(p50, p99) and how many requests finished.

    bench/server/load.py BASE_URL --clients C --requests R --max-tokens N --prompt-words W --tag T

Each client sends R requests one after another (`POST /v1/completions`, greedy, streamed,
`stream_options.include_usage`); every prompt is different (client, request and tag in its
text), so no server's prompt cache serves one from another. TTFT: from sending the request
to the first chunk with text; first chunk: to the first chunk with a choice, text or not.
Tokens: the usage chunk's `completion_tokens`. The standard
library only (http.client, threads), so it runs in the mlx_lm venv as it is.
"""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse

WORDS = ("river mountain valley forest ocean desert island city garden bridge road castle "
         "harbor meadow canyon glacier village tower market temple").split()


def prompt(words, client, request, tag):
    text = " ".join(WORDS[(client * 7 + request * 3 + i) % len(WORDS)] for i in range(words))
    return f"{tag} client {client} request {request}: {text}"


def one(base, body):
    url = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    started = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body), {"content-type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200, (response.status, response.read()[:500])
    ttft = None
    first_chunk = None
    chunks_before_text = 0
    tokens = None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        for choice in chunk.get("choices", []):
            if first_chunk is None:
                first_chunk = time.perf_counter() - started
            if choice.get("text") and ttft is None:
                ttft = time.perf_counter() - started
            elif ttft is None:
                chunks_before_text += 1
    conn.close()
    assert tokens is not None, "no usage chunk"
    end = time.perf_counter() - started
    return (ttft if ttft is not None else end, tokens,
            first_chunk if first_chunk is not None else end, chunks_before_text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--requests", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--prompt-words", type=int, default=40)
    p.add_argument("--tag", default="run")
    p.add_argument("--logprobs", type=int, default=0,
                   help="ask for N top log-probabilities: a server then sends a chunk for every "
                        "token, text or not, and the first chunk times the first token")
    a = p.parse_args()
    results = []
    errors = []
    lock = threading.Lock()

    def client(c):
        for r in range(a.requests):
            body = {"prompt": prompt(a.prompt_words, c, r, a.tag), "max_tokens": a.max_tokens,
                    "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
            if a.logprobs:
                body["logprobs"] = a.logprobs
            try:
                out = one(a.base, body)
                with lock:
                    results.append(out)
            except Exception as e:  # reported, and the run fails below
                with lock:
                    errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    ttfts = sorted(r[0] for r in results)
    tokens = sum(r[1] for r in results)
    first_chunks = [r[2] for r in results]

    def pct(q):
        return ttfts[min(len(ttfts) - 1, int(q * len(ttfts)))] if ttfts else None

    print(json.dumps({"clients": a.clients, "requests": len(results), "errors": errors,
                      "tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall,
                      "ttft_p50_ms": statistics.median(ttfts) * 1e3 if ttfts else None,
                      "ttft_p99_ms": pct(0.99) * 1e3 if ttfts else None,
                      # Apart from TTFT: a first chunk without text (a token whose text is
                      # held back, e.g. part of a UTF-8 character or of a stop string).
                      "first_chunk_p50_ms": (statistics.median(first_chunks) * 1e3
                                             if first_chunks else None),
                      "chunks_before_text_max": max((r[3] for r in results), default=None)}))


if __name__ == "__main__":
    main()
