#!/usr/bin/env python3
"""Client of serve_prefix_cache_test.sh: the prefix cache through //tools:serve.

  serve_prefix_cache_client.py chat URL TURNS    a greedy chat of TURNS turns, each
      request the whole conversation so far (as chat UIs send it), and between
      turns an unrelated prompt that runs in the same KV-cache slot (so a turn
      finds its slot holding other keys and values, not its history's); prints
      the assistant's answers as a JSON list
  serve_prefix_cache_client.py distinct URL N BUDGET   N completions of distinct
      prompts (about 200 tokens each); after each, /metrics's
      inferno_prefix_cache_bytes must be at most BUDGET bytes; prints the
      largest seen
"""
import http.client
import json
import sys
import urllib.parse

USER = "Turn {i}: tell me more about the lighthouse keeper and the storm from the north."


def post(url, path, body):
    """The parsed JSON answer of POST path, which must be 200."""
    parsed = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"{path}: {response.status} {text}")
    return json.loads(text)


def metric(url, name):
    parsed = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise RuntimeError(f"/metrics has no {name}")


def chat(url, turns):
    messages, answers = [], []
    for i in range(1, turns + 1):
        messages.append({"role": "user", "content": USER.format(i=i)})
        answer = post(url, "/v1/chat/completions",
                      {"model": "toy", "messages": messages, "temperature": 0, "max_tokens": 12})
        content = answer["choices"][0]["message"]["content"]
        answers.append(content)
        messages.append({"role": "assistant", "content": content})
        noise = f"{i:02d} is not a chat turn " + "and nothing here starts like one " * 3
        post(url, "/v1/completions", {"model": "toy", "prompt": noise, "max_tokens": 1})
    print(json.dumps(answers))


def distinct(url, n, budget):
    largest = 0
    for i in range(n):
        prompt = f"Prompt {i:03d}: " + " ".join(f"w{i * 31 + j}" for j in range(40))
        post(url, "/v1/completions", {"model": "toy", "prompt": prompt, "max_tokens": 1})
        used = metric(url, "inferno_prefix_cache_bytes")
        if used > budget:
            raise RuntimeError(f"prompt {i}: the prefix cache holds {used} bytes, over its budget of {budget}")
        largest = max(largest, used)
    print(largest)


def main():
    if sys.argv[1] == "chat":
        chat(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "distinct":
        distinct(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
