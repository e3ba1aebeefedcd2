#!/usr/bin/env python3
"""A small OpenAI-API client for the serve tests (standard library only).

  serve_client.py request URL KEY PATH BODY   one request; prints
      {"status", "body"} (JSON body parsed) or, for "stream": true, the
      stream folded: {"status", "text", "finish", "usage", "done", "chunks",
      "objects", "error"}
  serve_client.py slow URL KEY N              N clients trickle a request a
      byte every 0.2 s while a normal completion runs: it must succeed;
      exits non-zero otherwise
  serve_client.py concurrent URL KEY N        N streaming completions with
      seeds 1..N run one at a time, then all at once: every concurrent stream
      must equal its solo run (text, finish, usage); prints PASS or FAIL lines
      and exits non-zero on a failure
"""
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse


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
    folded = {"status": 200, "text": "", "finish": None, "usage": None, "done": False, "chunks": 0,
              "objects": [], "error": None}
    for line in response:
        line = line.decode("utf-8").rstrip("\n")
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            folded["done"] = True
            continue
        chunk = json.loads(data)
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
    conn.close()
    return folded


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


def slow(url, key, n):
    parsed = urllib.parse.urlparse(url)
    body = b'{"model": "toy", "prompt": "slow", "max_tokens": 4}'
    raw = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           (b"Authorization: Bearer " + key.encode() + b"\r\n" if key else b"") +
           b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stop = threading.Event()

    def trickle():
        sock = socket.create_connection((parsed.hostname, parsed.port), timeout=30)
        try:
            for byte in raw:
                if stop.is_set():
                    break
                sock.sendall(bytes([byte]))
                time.sleep(0.2)
        except OSError:
            pass  # dropped by the server: fine
        finally:
            sock.close()

    threads = [threading.Thread(target=trickle) for _ in range(n)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    result = request(url, key, "/v1/completions", '{"model": "toy", "prompt": "fast", "max_tokens": 8}', timeout=30)
    stop.set()
    for t in threads:
        t.join()
    if result["status"] != 200:
        print("FAIL: with %d slow clients a request got %s" % (n, result))
        return 1
    print("PASS: a request succeeds while %d clients send a byte every 0.2 s" % n)
    return 0


def main():
    command = sys.argv[1]
    if command == "request":
        url, key, path, body = sys.argv[2:6]
        print(json.dumps(request(url, key, path, body if body != "-" else None)))
    elif command == "slow":
        sys.exit(slow(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    elif command == "concurrent":
        url, key, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        sys.exit(1 if concurrent(url, key, n) else 0)


if __name__ == "__main__":
    main()
