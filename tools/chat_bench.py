#!/usr/bin/env python3
"""Multi-turn chat client for the prefix-cache benchmark (not a test).

Against two //tools:serve jobs on the same model, one with the prefix cache
off and one with it on, runs a TURNS-turn conversation as chat clients send
it: every request is the whole conversation so far (a document of
--history bytes, then for each turn a question and the model's greedy answer of
--answer tokens), a greedy completion. The last turn asks for one token:
its time to first token is the request's time, sent to answered (a
streamed chunk would not do: with random weights many tokens print
nothing, and the server sends no chunk for them). Each round uses a
conversation of its own (so the cached side never reuses an earlier
round's blocks) and runs it on the off side, then the on side. Prints, per
round and side, the last turn's prompt tokens and time to first token,
whether the two sides' answers (token ids' texts) were identical, then the
medians and their ratio (on / off).

  chat_bench.py URL_OFF URL_ON [--turns 10] [--history 1200] [--answer 32] [--rounds 3]
"""
import argparse
import http.client
import json
import random
import statistics
import time
import urllib.parse

WORDS = ("the a little girl boy dog cat bird tree house garden river sun moon star day night morning "
         "happy sad big small red blue green old new friend mother father play run jump walk look "
         "see find give take make went came said saw liked loved wanted could would was were had "
         "and but so then when because after before with from into under over near far").split()


def completion(url, prompt, tokens):
    """(seconds from sending to the whole answer, its text, prompt tokens) of a greedy completion."""
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=600)
    body = json.dumps({"model": "bench", "prompt": prompt, "max_tokens": tokens, "temperature": 0})
    start = time.monotonic()
    conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    text = response.read()
    seconds = time.monotonic() - start
    conn.close()
    if response.status != 200:
        raise RuntimeError("status %d: %s" % (response.status, text))
    answer = json.loads(text)
    return seconds, answer["choices"][0]["text"], answer["usage"]["prompt_tokens"]


def conversation(url, seed, turns, history, answer):
    """The last turn's (TTFT, prompt tokens), and every answer."""
    rng = random.Random(seed)
    prompt = f"Story {seed}."
    while len(prompt) < history:
        prompt += " " + rng.choice(WORDS)
    prompt += "\n"
    answers = []
    for turn in range(1, turns + 1):
        prompt += f"User: question {turn} about the story {seed}, please answer in a few words.\nAssistant:"
        ttft, text, prompt_tokens = completion(url, prompt, 1 if turn == turns else answer)
        answers.append(text)
        prompt += text + "\n"
    return ttft, prompt_tokens, answers


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url_off")
    parser.add_argument("url_on")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--history", type=int, default=1200, help="bytes of the opening document")
    parser.add_argument("--answer", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ttfts = {"off": [], "on": []}
    print("| round | cache | turn-%d prompt tokens | turn-%d TTFT ms | answers equal |" % (args.turns, args.turns))
    print("|---|---|---|---|---|")
    for r in range(1, args.rounds + 1):
        answers = {}
        for side, url in (("off", args.url_off), ("on", args.url_on)):
            ttft, prompt_tokens, answers[side] = conversation(url, r, args.turns, args.history, args.answer)
            ttfts[side].append(ttft)
            equal = "" if side == "off" else ("yes" if answers["on"] == answers["off"] else "NO")
            print("| %d | %s | %d | %.1f | %s |" % (r, side, prompt_tokens, ttft * 1000, equal), flush=True)
    off, on = statistics.median(ttfts["off"]), statistics.median(ttfts["on"])
    print("median turn-%d TTFT: off %.1f ms, on %.1f ms, on/off %.3f" % (args.turns, off * 1000, on * 1000, on / off))


if __name__ == "__main__":
    main()
