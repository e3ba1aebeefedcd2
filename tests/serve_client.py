#!/usr/bin/env python3
"""A small OpenAI-API client for the serve tests (standard library only).

  serve_client.py request URL KEY PATH BODY   one request; prints
      {"status", "body"} (JSON body parsed) or, for "stream": true, the
      stream folded: {"status", "text", "finish", "usage", "done", "chunks",
      "objects", "error"}
  serve_client.py slow URL KEY N DEADLINE_MS  N clients send a request a
      byte a second (half of them the request line at once, then the
      headers a byte a second) while normal completions run: those must
      succeed, and every slow client must be disconnected within
      DEADLINE_MS + 4 s of its first byte, the ones past the request line
      answered 408 first; prints PASS or FAIL lines, exits non-zero on a
      failure
  serve_client.py health URL SECONDS          polls GET /health (every
      10 ms) until the server stops answering or SECONDS pass; prints each
      new answer on a line as it comes: [200, "ok"], [503, "unhealthy"],
      ..., "refused"
  serve_client.py drain URL KEY RANK0_PID BODY  the streamed completion
      BODY; once its first chunk has come, SIGTERM to RANK0_PID; once /health
      says "draining", /metrics's count of running requests; then the rest of
      the stream; prints {"running_after_signal", "chunks_before_signal",
      "stream" (folded as by request)}
  serve_client.py concurrent URL KEY N        N streaming completions with
      seeds 1..N run one at a time, then all at once: every concurrent stream
      must equal its solo run (text, finish, usage); prints PASS or FAIL lines
      and exits non-zero on a failure
"""
import http.client
import json
import os
import re
import select
import signal
import socket
import sys
import threading
import time
import urllib.parse

import serve_sse


def request(url, key, path, body, timeout=120):
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    conn.request("POST" if body is not None else "GET", path, body=body, headers=headers)
    response = conn.getresponse()
    try:
        stream = body is not None and json.loads(body).get("stream") is True
    except (ValueError, AttributeError):
        stream = False
    if not stream or response.status != 200:
        raw = response.read()
        conn.close()
        try:
            parsed_body = json.loads(raw)
        except ValueError:
            parsed_body = raw.decode("utf-8", "replace")
        return {"status": response.status, "body": parsed_body}
    folded = new_folded()
    fold(response, folded)
    conn.close()
    return folded


def new_folded():
    return {"status": 200, "text": "", "finish": None, "usage": None, "done": False, "chunks": 0,
            "objects": [], "error": None}


def fold(response, folded, chunks=None):
    """Folds the server-sent events of a streamed answer into `folded`, to the
    end of the stream or, if `chunks` is given, until that many chunks have
    been folded."""
    for chunk in serve_sse.events(response):
        if chunk == serve_sse.DONE:
            folded["done"] = True
            continue
        if "error" in chunk:
            folded["error"] = chunk["error"]
            continue
        folded["chunks"] += 1
        if chunk["object"] not in folded["objects"]:
            folded["objects"].append(chunk["object"])
        if chunk.get("usage"):
            folded["usage"] = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice.get("delta")
            folded["text"] += delta.get("content", "") if delta is not None else choice.get("text", "")
            if choice.get("finish_reason"):
                folded["finish"] = choice["finish_reason"]
        if chunks is not None and folded["chunks"] >= chunks:
            return


def drain(url, key, rank0_pid, body):
    """Proves a drain: starts the streamed completion BODY and, once its first
    chunk has come, sends rank 0 SIGTERM; waits (30 s at most) until /health
    answers 503 "draining" (the signal has landed) and then reads, from
    /metrics, how many requests run; then reads the stream to its end.
    Prints {"running_after_signal", "chunks_before_signal", "stream"}."""
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    conn.request("POST", "/v1/completions", body=body, headers=headers)
    response = conn.getresponse()
    folded = new_folded()
    folded["status"] = response.status
    running, chunks_before_signal = None, 0
    if response.status == 200:
        fold(response, folded, chunks=1)
        chunks_before_signal = folded["chunks"]
        os.kill(rank0_pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while running is None and time.monotonic() < deadline:
            try:
                health = request(url, "", "/health", None, timeout=5)
                if health["status"] == 503 and isinstance(health["body"], dict) and \
                        health["body"].get("status") == "draining":
                    metrics = request(url, "", "/metrics", None, timeout=5)
                    if metrics["status"] == 200:
                        running = int(re.search(r"^inferno_running_requests (\d+)$", metrics["body"],
                                                re.MULTILINE).group(1))
            except (OSError, http.client.HTTPException):
                pass  # refused over --max-connections, or a reset: ask again
            if running is None:
                time.sleep(0.01)
        fold(response, folded)
    conn.close()
    print(json.dumps({"running_after_signal": running, "chunks_before_signal": chunks_before_signal,
                      "stream": folded}))


def concurrent(url, key, n):
    bodies = [json.dumps({"model": "toy", "prompt": "Story %d:" % seed, "max_tokens": 40 + seed,
                          "temperature": 0.9, "top_p": 0.95, "seed": seed, "stream": True,
                          "stream_options": {"include_usage": True}})
              for seed in range(1, n + 1)]
    solo = [request(url, key, "/v1/completions", body) for body in bodies]
    together = [None] * n

    def run(i):
        together[i] = request(url, key, "/v1/completions", bodies[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failures = 0
    for i in range(n):
        a, b = solo[i], together[i]
        keys = ("status", "text", "finish", "usage", "done", "error")
        if any(a.get(k) != b.get(k) for k in keys) or not a["done"] or a["usage"] is None:
            print("FAIL: stream %d alone %s, among %d others %s" % (i + 1, a, n - 1, b))
            failures += 1
    if failures == 0:
        print("PASS: %d concurrent streams each equal their solo run" % n)
    return failures


def slow(url, key, n, deadline_ms):
    parsed = urllib.parse.urlparse(url)
    body = b'{"model": "toy", "prompt": "slow", "max_tokens": 4}'
    line = b"POST /v1/completions HTTP/1.1\r\n"
    rest = (b"Host: x\r\nContent-Type: application/json\r\n" +
            (b"Authorization: Bearer " + key.encode() + b"\r\n" if key else b"") +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)
    outcomes = [None] * n  # (seconds from the first byte to the close, the answer)
    started = [threading.Event() for _ in range(n)]  # connected, and the first bytes sent

    def trickle(i):
        sock = socket.create_connection((parsed.hostname, parsed.port), timeout=30)
        at_once, dribble = (line, rest) if i % 2 else (b"", line + rest)
        start = time.monotonic()
        answer = b""
        try:
            if at_once:
                sock.sendall(at_once)
            for byte in dribble:
                sock.sendall(bytes([byte]))
                started[i].set()
                # A second until the next byte, unless the server answers or closes.
                readable, _, _ = select.select([sock], [], [], 1.0)
                if readable:
                    break
            while True:
                got = sock.recv(4096)
                if not got:
                    break
                answer += got
        except OSError:
            pass  # reset by the server: closed
        outcomes[i] = (time.monotonic() - start, answer)
        sock.close()

    threads = [threading.Thread(target=trickle, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    failures = 0
    # The normal requests go once every slow client is connected and sending.
    deadline = time.monotonic() + 30
    for i, event in enumerate(started):
        if not event.wait(max(0.0, deadline - time.monotonic())):
            print("FAIL: slow client %d had not connected and sent a byte within 30 s" % i)
            failures += 1
    fast = '{"model": "toy", "prompt": "fast", "max_tokens": 8}'
    for _ in range(3):
        begin = time.monotonic()
        result = request(url, key, "/v1/completions", fast, timeout=30)
        if result["status"] != 200:
            print("FAIL: with %d slow clients a request got %s" % (n, result))
            failures += 1
        else:
            print("a request among %d slow clients took %.2f s" % (n, time.monotonic() - begin))
    for t in threads:
        t.join()
    bound = deadline_ms / 1000 + 4
    for i, (seconds, answer) in enumerate(outcomes):
        head = answer.split(b"\r\n", 1)[0].decode("latin-1")
        if seconds > bound:
            print("FAIL: slow client %d was disconnected after %.1f s (bound %.1f s)" % (i, seconds, bound))
            failures += 1
        elif i % 2 and not (head.startswith("HTTP/1.1 408 ") and b'"request_timeout"' in answer):
            print("FAIL: slow client %d (past its request line) got %r, not 408" % (i, answer))
            failures += 1
        elif i % 2 == 0 and answer and not head.startswith("HTTP/1.1 408 "):
            print("FAIL: slow client %d got %r" % (i, answer))
            failures += 1
        else:
            print("slow client %d: disconnected after %.1f s, answer %r" % (i, seconds, head))
    if failures == 0:
        print("PASS: requests succeed while %d clients send a byte a second; those are dropped" % n)
    return failures


def health(url, seconds):
    last = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            body = request(url, "", "/health", None, timeout=2)
            state = [body["status"], body["body"].get("status") if isinstance(body["body"], dict) else body["body"]]
        except (OSError, http.client.HTTPException):
            state = "refused"
        if state != last:
            print(json.dumps(state), flush=True)
            last = state
        if state == "refused":
            break
        time.sleep(0.01)


def main():
    command = sys.argv[1]
    if command == "request":
        url, key, path, body = sys.argv[2:6]
        print(json.dumps(request(url, key, path, body if body != "-" else None)))
    elif command == "slow":
        sys.exit(1 if slow(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])) else 0)
    elif command == "health":
        health(sys.argv[2], float(sys.argv[3]))
    elif command == "drain":
        drain(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif command == "concurrent":
        url, key, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        sys.exit(1 if concurrent(url, key, n) else 0)


if __name__ == "__main__":
    main()
