"""Checks //tools:serve's sampling answers (serve_sampling_test.sh).

  serve_sampling_check.py logprobs ANSWER.json LOGITS IDS VOCAB
      ANSWER is a greedy /v1/completions or /v1/chat/completions answer with
      logprobs; LOGITS and IDS are `infer --dump-logits --output ids` of the
      same prompt. Every token's logprob must be the log-softmax of infer's
      logits at its step for infer's token (the argmax), and its alternatives
      the most likely log-softmax values, in order.
  serve_sampling_check.py stream-equals ANSWER.json STREAM.txt
      The logprobs of a streamed answer (server-sent events) joined equal the
      JSON answer's.
  serve_sampling_check.py penalized ANSWER.json PRESENCE FREQUENCY
      A greedy chat answer with top_logprobs: at every step the token taken
      scores at least as well as every listed alternative once each is
      penalized (OpenAI's presence and frequency penalties over the tokens
      generated before it), and it is not what the unpenalized scores pick.
"""
import json
import math
import struct
import sys

TOLERANCE = 2e-4


def log_softmax(logits):
    top = max(logits)
    log_sum = top + math.log(sum(math.exp(x - top) for x in logits))
    return [x - log_sum for x in logits]


def entries(answer):
    """(token text, logprob, [(text, logprob)...]) per token of a chat or completion answer."""
    logprobs = answer["choices"][0]["logprobs"]
    if "content" in logprobs:
        return [(e["token"], e["logprob"], [(t["token"], t["logprob"]) for t in e["top_logprobs"]])
                for e in logprobs["content"]]
    return [(token, value, sorted(top.items(), key=lambda kv: -kv[1]))
            for token, value, top in zip(logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"])]


def check_logprobs(answer_path, logits_path, ids_path, vocab):
    answer = json.load(open(answer_path))
    ids = [int(x) for x in open(ids_path).read().split()]
    raw = open(logits_path, "rb").read()
    steps = len(raw) // (4 * vocab)
    got = entries(answer)
    if not got or len(got) > min(steps, len(ids)):
        sys.exit(f"{len(got)} logprob entries; infer sampled {len(ids)} tokens from {steps} logit vectors")
    for step, (text, value, top) in enumerate(got):
        logits = struct.unpack_from(f"={vocab}f", raw, step * 4 * vocab)
        expected = log_softmax(logits)
        if abs(value - expected[ids[step]]) > TOLERANCE:
            sys.exit(f"step {step}: logprob {value}, infer's logits give {expected[ids[step]]} for token {ids[step]}")
        best = sorted(expected, reverse=True)[: len(top)]
        values = [v for _, v in top]
        # Completions' alternatives (the test asks for 5) are keyed by text,
        # so tokens that print the same collapse: each left must still be
        # one of the 5 most likely.
        if "content" in answer["choices"][0]["logprobs"]:
            if any(abs(a - b) > TOLERANCE for a, b in zip(values, best)) or len(values) != len(best):
                sys.exit(f"step {step}: top_logprobs {values}, expected {best}")
        elif any(min(abs(v - b) for b in sorted(expected, reverse=True)[:5]) > TOLERANCE for v in values):
            sys.exit(f"step {step}: top_logprobs {values} are not among the most likely {best}")
        if top and value < top[0][1] - TOLERANCE:
            sys.exit(f"step {step}: greedy token's logprob {value} is below an alternative's {top[0][1]}")
    print(f"{len(got)} tokens' logprobs match infer's logits")


def check_stream(answer_path, stream_path):
    answer = json.load(open(answer_path))
    chunks = [json.loads(line[6:]) for line in open(stream_path) if line.startswith("data: {")]
    joined = None
    for chunk in chunks:
        logprobs = chunk["choices"][0]["logprobs"] if chunk["choices"] else None
        if logprobs is None:
            continue
        if joined is None:
            joined = {key: list(value) if isinstance(value, list) else value for key, value in logprobs.items()}
        else:
            for key, value in logprobs.items():
                if isinstance(value, list):
                    joined[key] += value
    if joined != answer["choices"][0]["logprobs"]:
        sys.exit(f"streamed logprobs {joined} differ from the JSON answer's {answer['choices'][0]['logprobs']}")
    print("streamed logprobs equal the JSON answer's")


def check_penalized(answer_path, presence, frequency):
    got = entries(json.load(open(answer_path)))
    counts = {}
    differs = False
    for step, (text, value, top) in enumerate(got):
        # Tokens are told apart by their text: those that print as nothing
        # (control bytes of the toy's byte vocabulary) cannot be, so the
        # steps that take one are not checked.
        if text == "":
            continue
        score = lambda t, v: v - frequency * counts.get(t, 0) - (presence if counts.get(t, 0) else 0)
        taken = score(text, value)
        for alternative, v in top:
            if alternative not in (text, "") and score(alternative, v) > taken + TOLERANCE:
                sys.exit(f"step {step}: took '{text}' ({taken}) over '{alternative}' ({score(alternative, v)})")
        differs |= bool(top) and top[0][0] != text
        counts[text] = counts.get(text, 0) + 1
    if not differs:
        sys.exit("the penalties never changed a pick: the check cannot tell")
    print(f"{len(got)} penalized picks check out")


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "logprobs":
        check_logprobs(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif command == "stream-equals":
        check_stream(sys.argv[2], sys.argv[3])
    elif command == "penalized":
        check_penalized(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(f"unknown command {command}")
