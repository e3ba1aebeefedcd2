"""The server-sent events of a streamed OpenAI answer, as the serve test
clients read them (standard library only)."""
import json

DONE = "[DONE]"


def events(response):
    """Yields each event of `response` (an http.client response, read line by
    line): the parsed JSON object of each "data: {...}" line, or DONE for
    "data: [DONE]"; other lines are skipped."""
    for line in response:
        line = line.decode("utf-8").rstrip("\n")
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        yield DONE if data == DONE else json.loads(data)
