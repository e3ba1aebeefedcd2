#!/usr/bin/env python3
"""Checks a serve --failover leader's side of server/continuation.h
(standard library only): serve_continuation_check.py URL

For a greedy chat stream and a greedy completion stream: asked with
"inferno_continue": {"tokens": []}, each chunk of tokens comes after an SSE
comment naming them; asked again with the tokens of its first chunks (and an
id and created), the leader streams the rest: no role chunk, the given id and
created, and the first chunks' text followed by the rest's equals the whole
text, with the same finish_reason. Asked with every token, the answer ends at
once with finish_reason "length". Exits 1 with the reason otherwise.
"""
import http.client
import json
import sys
import urllib.parse

PREFIX = ": inferno-tokens "


def stream(url, path, body):
    """The (tokens, chunk) pairs of a streamed answer, and whether a role chunk came."""
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read().decode("utf-8")
    assert response.status == 200, (response.status, data)
    chunks, pending = [], []
    for block in data.split("\n\n"):
        if block.startswith(PREFIX):
            pending = [int(t) for t in block[len(PREFIX):].split(",") if t]
        elif block.startswith("data: ") and block != "data: [DONE]":
            chunk = json.loads(block[6:])
            assert "error" not in chunk, chunk
            chunks.append((pending, chunk))
            pending = []
    return chunks


def text_of(chunk):
    choice = chunk["choices"][0] if chunk["choices"] else {}
    if "delta" in choice:
        return choice["delta"].get("content") or ""
    return choice.get("text") or ""


def finish_of(chunks):
    return [c["choices"][0]["finish_reason"] for _, c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]


def check(url, path, body, max_tokens):
    whole = stream(url, path, dict(body, inferno_continue={"tokens": []}))
    tokens = [t for ts, _ in whole for t in ts]
    length = finish_of(whole) == ["length"]
    assert len(tokens) == max_tokens or not length, ("the comments name %d tokens" % len(tokens), max_tokens)
    assert len(tokens) >= 2, "too short an answer to continue: %d tokens" % len(tokens)
    roles = [c for _, c in whole if c["choices"] and "role" in c["choices"][0].get("delta", {})]
    assert len(roles) == (1 if "messages" in body else 0), roles
    # The first chunks holding about half of the tokens.
    head, count = 0, 0
    while count < len(tokens) // 2:
        count += len(whole[head][0])
        head += 1
    sent = [t for ts, _ in whole[:head] for t in ts]
    rest = stream(url, path, dict(body, inferno_continue={"tokens": sent, "id": "x-7", "created": 5}))
    assert all(c["id"] == "x-7" and c["created"] == 5 for _, c in rest), rest[0]
    assert not any(c["choices"] and "role" in c["choices"][0].get("delta", {}) for _, c in rest), "a role chunk"
    assert [t for ts, _ in rest for t in ts] == tokens[len(sent):], "the continued tokens differ"
    before = "".join(text_of(c) for _, c in whole)
    after = "".join(text_of(c) for _, c in whole[:head]) + "".join(text_of(c) for _, c in rest)
    assert after == before, ("the continued text differs", before, after)
    assert finish_of(rest) == finish_of(whole), (finish_of(rest), finish_of(whole))
    if not length:
        return
    done = stream(url, path, dict(body, inferno_continue={"tokens": tokens}))
    assert "".join(text_of(c) for _, c in done) == "" and finish_of(done) == ["length"], done


def main():
    url = sys.argv[1]
    common = {"model": "toy", "max_tokens": 40, "temperature": 0, "stream": True}
    check(url, "/v1/chat/completions", dict(common, messages=[{"role": "user", "content": "Hello"}]), 40)
    check(url, "/v1/completions", dict(common, prompt="Once upon a time"), 40)
    print("continuation: chat and completion streams continue from their first chunks' tokens")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print("FAIL: %s" % (error,), file=sys.stderr)
        sys.exit(1)
