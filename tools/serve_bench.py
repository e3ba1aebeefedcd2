#!/usr/bin/env python3
"""Load generator for //tools:serve (a benchmark, not a test).

For each concurrency C in --streams, runs C client threads at once, each
sending --requests streaming completions of --tokens tokens one after the
other (seeded sampling, so no stop token cuts them short), and reports:
aggregate generated tokens/s (all completion tokens / wall time of the
round), time to first token (request sent -> first chunk) p50/p99, and
per-token latency p50/p99 (the gaps between a stream's chunks; a chunk
carries the tokens generated since the previous one, and the report gives
the tokens per chunk so that any batching shows). Repeats every concurrency
--rounds times, interleaved, and prints one row per (round, C).

With --plot PNG it also draws TTFT and per-token latency (p50 and p99, one
line per round) against the number of streams, with matplotlib (Debian:
apt-get install python3-matplotlib; without it the table is printed and a
line says the plot was not drawn). --from-table MARKDOWN draws the plot from
the first table of this form in a file (docs/serving.md's) instead of
measuring, so the plot in docs/ is always that of the table there.

  serve_bench.py URL [--streams 1,4,8,16] [--tokens 64] [--requests 2] [--rounds 2] [--plot PNG]
  serve_bench.py --from-table docs/serving.md --plot docs/serving_latency.png
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def one_request(url, seed, tokens):
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=300)
    body = json.dumps({"model": "bench", "prompt": "Once upon a time", "max_tokens": tokens, "temperature": 0.8,
                       "seed": seed, "stream": True, "stream_options": {"include_usage": True}})
    start = time.monotonic()
    conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError("status %d: %s" % (response.status, response.read()))
    arrivals = []
    generated = 0
    for line in response:
        if not line.startswith(b"data: {"):
            continue
        chunk = json.loads(line[len(b"data: "):])
        if chunk.get("usage"):
            generated = chunk["usage"]["completion_tokens"]
        elif chunk["choices"] and chunk["choices"][0]["finish_reason"] is None:
            arrivals.append(time.monotonic())
    conn.close()
    return start, arrivals, generated


def run_round(url, streams, tokens, requests, seed_base):
    results = []
    lock = threading.Lock()

    def client(i):
        for r in range(requests):
            result = one_request(url, seed_base + i * 1000 + r, tokens)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(streams)]
    begin = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - begin
    generated = sum(r[2] for r in results)
    ttft = [r[1][0] - r[0] for r in results if r[1]]
    gaps = [b - a for r in results for a, b in zip(r[1], r[1][1:])]
    chunks = sum(len(r[1]) for r in results)
    return {"streams": streams, "tokens_per_s": generated / wall, "ttft_p50": percentile(ttft, 50),
            "ttft_p99": percentile(ttft, 99), "tpot_p50": percentile(gaps, 50), "tpot_p99": percentile(gaps, 99),
            "tokens_per_chunk": generated / chunks if chunks else float("nan"), "requests": len(results)}


# The columns of the printed table that the plot needs: (header, row key).
PLOTTED = [("round", "round"), ("streams", "streams"), ("TTFT p50 ms", "ttft_p50"), ("TTFT p99 ms", "ttft_p99"),
           ("per-token p50 ms", "tpot_p50"), ("per-token p99 ms", "tpot_p99")]


def read_table(path):
    """The rows of the first markdown table in `path` that has the PLOTTED
    columns, as dicts of PLOTTED keys (latencies in seconds) plus "build",
    the table's build column when it has one (tables comparing two builds),
    else ""."""
    rows, columns, build_column = [], None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if columns is None:
                if line.startswith("|") and all(header in cells for header, _ in PLOTTED):
                    columns = {key: cells.index(header) for header, key in PLOTTED}
                    build_column = cells.index("build") if "build" in cells else None
                continue
            if not line.startswith("|"):
                break
            if set(line.strip()) <= set("|-: "):
                continue
            row = {key: float(cells[i]) for key, i in columns.items()}
            for key in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99"):
                row[key] /= 1e3
            row["build"] = cells[build_column] if build_column is not None else ""
            rows.append(row)
    if not rows:
        raise SystemExit("serve_bench: %s has no table with the columns %s" % (path, [h for h, _ in PLOTTED]))
    return rows


def plot(rows, path):
    """Draws TTFT and per-token latency p50/p99 against streams, a line per
    round (per build and round when the rows name builds), into the PNG `path`; says so and returns when matplotlib is absent."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        print("serve_bench: no plot: matplotlib is not installed for %s (Debian: apt-get install python3-matplotlib)"
              % sys.executable)
        return
    figure, axes = pyplot.subplots(1, 2, figsize=(10, 4))
    series = sorted({(r.get("build", ""), int(r["round"])) for r in rows})
    for ax, (title, key) in zip(axes, [("time to first token", "ttft"), ("per-token latency", "tpot")]):
        for index, (build, round_number) in enumerate(series):
            mine = sorted((r for r in rows if (r.get("build", ""), int(r["round"])) == (build, round_number)),
                          key=lambda r: r["streams"])
            streams = [r["streams"] for r in mine]
            name = ("%s, round %d" % (build, round_number)) if build else ("round %d" % round_number)
            for p, color, marker in (("p50", "tab:blue", "o"), ("p99", "tab:red", "s")):
                ax.plot(streams, [r[key + "_" + p] * 1e3 for r in mine], color=color, marker=marker,
                        linestyle=["-", "--", ":", "-."][index % 4], label="%s, %s" % (p, name))
        ax.set_title(title)
        ax.set_xlabel("concurrent streams")
        ax.set_ylabel("ms")
        ax.set_xticks(sorted({r["streams"] for r in rows}))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print("serve_bench: plot written to %s" % path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url", nargs="?")
    parser.add_argument("--streams", default="1,4,8,16")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--plot", metavar="PNG", help="draw the latencies into this PNG (needs matplotlib)")
    parser.add_argument("--from-table", metavar="MARKDOWN", help="plot this file's table instead of measuring")
    args = parser.parse_args()
    if args.from_table:
        if not args.plot or args.url:
            parser.error("--from-table takes --plot PNG and no URL")
        plot(read_table(args.from_table), args.plot)
        return
    if not args.url:
        parser.error("the server's URL is required")
    streams = [int(s) for s in args.streams.split(",")]
    one_request(args.url, 0, 8)  # warm-up
    rows = []
    print("| round | streams | requests | tokens/s | x 1 stream | TTFT p50 ms | TTFT p99 ms | per-token p50 ms | "
          "per-token p99 ms | tokens/chunk |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for round_index in range(args.rounds):
        base = None
        for s in streams:
            row = run_round(args.url, s, args.tokens, args.requests, 1 + round_index * 100000)
            row["round"] = round_index + 1
            if s == 1:
                base = row["tokens_per_s"]
            rows.append(row)
            print("| %d | %d | %d | %.1f | %s | %.1f | %.1f | %.2f | %.2f | %.2f |" % (
                round_index + 1, s, row["requests"], row["tokens_per_s"],
                "%.2f" % (row["tokens_per_s"] / base) if base else "-", row["ttft_p50"] * 1e3,
                row["ttft_p99"] * 1e3, row["tpot_p50"] * 1e3, row["tpot_p99"] * 1e3, row["tokens_per_chunk"]),
                flush=True)
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
