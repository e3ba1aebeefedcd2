#!/usr/bin/env python3
"""The client of serve_failover_test.sh (standard library only).

  serve_failover_client.py URL N MAX_TOKENS [KILL_PID KILL_AFTER [SIGNAL]]
      N greedy streaming completions at once, each of its own prompt, of
      MAX_TOKENS tokens at most. With KILL_PID: once KILL_AFTER chunks have
      arrived over all streams, SIGNAL (KILL or STOP; KILL by default) to
      KILL_PID (the "kill" below; with SIGNAL NONE, the moment is marked and
      nothing is signalled, so an undisturbed run gives the same windows). Prints one JSON object:
      {"streams": [{"text", "text_before_kill", "finish", "error", "done"},
      ...] (in prompt order; text_before_kill: the text of the chunks that
      arrived before the kill, all of it when none came after),
      "kill_to_next_chunk_ms" (from the kill to the first chunk of
      any stream after it, which may have been on its way before the kill;
      null without a kill or if none came), "kill_to_every_next_chunk_ms"
      (to the first chunk after the kill of every stream that had not ended
      by then), "longest_gap_ms" (the longest wait of any stream between
      consecutive chunks), "chunks_per_s_before_kill" (all streams' chunks
      per second from the moment every stream had its first to the kill) and
      "chunks_per_s_after" (from the moment every stream had its next chunk
      after the kill to the first stream's end), each null when its window is
      empty}.
"""
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

import serve_sse


def prompt(index):
    return "Once upon a time, stream %d" % index


def main():
    url, n, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    kill_pid = int(sys.argv[4]) if len(sys.argv) > 4 else None
    kill_after = int(sys.argv[5]) if len(sys.argv) > 5 else None
    signal_name = sys.argv[6] if len(sys.argv) > 6 else "KILL"
    kill_signal = None if signal_name == "NONE" else getattr(signal, "SIG" + signal_name)
    parsed = urllib.parse.urlparse(url)
    lock = threading.Lock()
    state = {"chunks": 0, "killed_at": None, "times": []}
    streams = [{"text": "", "text_before_kill": None, "finish": None, "error": None, "done": False,
                "after_kill": None, "ended_at": None, "last_chunk": None, "first_chunk": None, "longest_gap": 0.0} for _ in range(n)]

    def run(index):
        stream = streams[index]
        body = json.dumps({"model": "toy", "prompt": prompt(index), "max_tokens": max_tokens,
                           "temperature": 0, "stream": True})
        try:
            conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
            conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            if response.status != 200:
                stream["error"] = {"status": response.status, "body": response.read().decode("utf-8", "replace")}
                return
            for chunk in serve_sse.events(response):
                if chunk == serve_sse.DONE:
                    stream["done"] = True
                    continue
                if "error" in chunk:
                    stream["error"] = chunk["error"]
                    continue
                now = time.monotonic()
                if stream["last_chunk"] is not None:
                    stream["longest_gap"] = max(stream["longest_gap"], now - stream["last_chunk"])
                else:
                    stream["first_chunk"] = now
                stream["last_chunk"] = now
                with lock:
                    state["times"].append(now)
                    if state["killed_at"] is not None and stream["after_kill"] is None:
                        stream["after_kill"] = now
                        stream["text_before_kill"] = stream["text"]
                    state["chunks"] += 1
                    if kill_pid is not None and state["killed_at"] is None and state["chunks"] >= kill_after:
                        if kill_signal is not None:
                            os.kill(kill_pid, kill_signal)
                        state["killed_at"] = time.monotonic()
                for choice in chunk["choices"]:
                    stream["text"] += choice.get("text", "")
                    if choice.get("finish_reason"):
                        stream["finish"] = choice["finish_reason"]
            conn.close()
        except (OSError, http.client.HTTPException, ValueError) as error:
            stream["error"] = {"client": repr(error)}
        finally:
            stream["ended_at"] = time.monotonic()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    killed_at = state["killed_at"]
    for s in streams:
        if s["text_before_kill"] is None:
            s["text_before_kill"] = s["text"]
    firsts = [s["after_kill"] for s in streams if s["after_kill"] is not None]
    waiting = [s for s in streams if killed_at is not None and s["ended_at"] > killed_at and s["finish"]]
    # When every stream still running at the kill had its next chunk.
    resumed = None
    if killed_at is not None and waiting and all(s["after_kill"] is not None for s in waiting):
        resumed = max(s["after_kill"] for s in waiting)
    all_started = None
    if all(s["first_chunk"] is not None for s in streams):
        all_started = max(s["first_chunk"] for s in streams)
    first_end = min(s["ended_at"] for s in streams)

    def rate(begin, end):
        if begin is None or end is None or end <= begin:
            return None
        return round(sum(1 for t in state["times"] if begin < t <= end) / (end - begin), 1)

    print(json.dumps({
        "streams": [{k: s[k] for k in ("text", "text_before_kill", "finish", "error", "done")} for s in streams],
        "killed": killed_at is not None,
        "kill_to_next_chunk_ms": round((min(firsts) - killed_at) * 1000) if firsts else None,
        "kill_to_every_next_chunk_ms": round((resumed - killed_at) * 1000) if resumed else None,
        "longest_gap_ms": round(max(s["longest_gap"] for s in streams) * 1000),
        "chunks_per_s_before_kill": rate(all_started, killed_at),
        "chunks_per_s_after": rate(resumed, first_end),
    }))


if __name__ == "__main__":
    main()
