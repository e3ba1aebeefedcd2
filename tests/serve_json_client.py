"""Client of serve_json_test.sh: constrained output through //tools:serve.

  serve_json_client.py schema URL KEY N      N json_schema requests at temperature 1, 8 at a time:
                                             every answer parses and validates against the schema
  serve_json_client.py object URL KEY N      N json_object requests: every answer is a JSON object
  serve_json_client.py tool URL KEY          tool_choice "required" and a named function, streamed and
                                             not: tool_calls come back whose arguments match the
                                             tool's parameters; then a round trip with the tool's answer
"""
import http.client
import json
import sys
import threading
import urllib.parse

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8},
        "age": {"type": "integer"},
        "height": {"type": "number"},
        "member": {"type": "boolean"},
        "color": {"enum": ["red", "green", 3, None]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
        "pet": {"type": "object", "properties": {"kind": {"enum": ["cat", "dog"]}}, "required": ["kind"]},
    },
    "required": ["name", "age", "member", "pet"],
    "additionalProperties": False,
}
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                         "parameters": {"type": "object",
                                                        "properties": {"city": {"type": "string", "maxLength": 10},
                                                                       "days": {"type": "integer"}},
                                                        "required": ["city"]}}}


def validate(value, schema, path="$"):
    """Raises ValueError unless `value` matches `schema` (the subset the server takes)."""
    if "enum" in schema:
        if not any(value == e and type(value) is type(e) for e in schema["enum"]):
            raise ValueError(f"{path}: {value!r} not in {schema['enum']}")
        return
    kind = schema.get("type")
    checks = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
              "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "null": lambda v: v is None}
    if kind and not checks[kind](value):
        raise ValueError(f"{path}: {value!r} is not {kind}")
    if kind == "string" and not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", 1 << 30):
        raise ValueError(f"{path}: length {len(value)}")
    if kind == "array":
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", 1 << 30):
            raise ValueError(f"{path}: {len(value)} items")
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{path}[{i}]")
    if kind == "object" and "properties" in schema:
        for name in schema.get("required", []):
            if name not in value:
                raise ValueError(f"{path}: '{name}' missing")
        for name, item in value.items():
            if name not in schema["properties"]:
                raise ValueError(f"{path}: unexpected '{name}'")
            validate(item, schema["properties"][name], f"{path}.{name}")


def post(url, key, body):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    connection.request("POST", "/v1/chat/completions", json.dumps(body),
                       {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    if response.status != 200:
        raise ValueError(f"status {response.status}: {text}")
    if body.get("stream"):
        return [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: {")]
    return json.loads(text)


def chat(content, **fields):
    return {"model": "toy", "messages": [{"role": "user", "content": content}], "max_tokens": 400, **fields}


def many(url, key, n, body, check):
    failures, lock = [], threading.Lock()

    def run(indices):
        for i in indices:
            try:
                answer = post(url, key, {**body, "seed": i})
                text = answer["choices"][0]["message"]["content"]
                if answer["choices"][0]["finish_reason"] != "stop":
                    raise ValueError(f"finish_reason {answer['choices'][0]['finish_reason']}: {text!r}")
                check(json.loads(text))
            except Exception as error:  # every failure is reported
                with lock:
                    failures.append(f"request {i}: {error}")

    threads = [threading.Thread(target=run, args=(range(t, n, 8),)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"{n - len(failures)}/{n} answers parse and validate")
    return not failures


def object_check(value):
    if not isinstance(value, dict):
        raise ValueError(f"{value!r} is not an object")


def tool_checks(url, key):
    for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
        body = chat("Weather?", tools=[TOOL], tool_choice=choice, temperature=1, seed=5)
        answer = post(url, key, body)
        message = answer["choices"][0]["message"]
        if answer["choices"][0]["finish_reason"] != "tool_calls" or len(message.get("tool_calls", [])) != 1:
            raise ValueError(f"tool_choice {choice}: {answer}")
        call = message["tool_calls"][0]
        if call["type"] != "function" or call["function"]["name"] != "get_weather" or not call["id"]:
            raise ValueError(f"tool call {call}")
        validate(json.loads(call["function"]["arguments"]), TOOL["function"]["parameters"])
        chunks = post(url, key, {**body, "stream": True})
        deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks
                  if c["choices"] and "tool_calls" in c["choices"][0]["delta"]]
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
        streamed = {"id": deltas[0]["id"], "type": "function",
                    "function": {"name": deltas[0]["function"]["name"],
                                 "arguments": "".join(d["function"]["arguments"] for d in deltas)}} if deltas else None
        # Ids name the request, so the streamed one differs.
        same = streamed and {**streamed, "id": call["id"]} == call and streamed["id"].startswith("call_")
        if finish != ["tool_calls"] or not same or deltas[0]["index"] != 0:
            raise ValueError(f"streamed tool call {deltas} {finish}, JSON answer {call}")
        print(f"tool_choice {json.dumps(choice)}: {call['function']['arguments']}, streamed alike")
    # The round trip: the call, the tool's answer, a final answer.
    final = post(url, key, {"model": "toy", "max_tokens": 8, "tools": [TOOL], "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "{\"temp\": 21}"}]})
    if final["choices"][0]["message"]["role"] != "assistant":
        raise ValueError(f"final answer {final}")
    print("round trip answered")


if __name__ == "__main__":
    command, url, key = sys.argv[1:4]
    if command == "schema":
        body = chat("A person, please.", temperature=1,
                    response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}})
        sys.exit(0 if many(url, key, int(sys.argv[4]), body, lambda v: validate(v, SCHEMA)) else 1)
    if command == "object":
        body = chat("Anything.", temperature=0.7, response_format={"type": "json_object"}, max_tokens=600)
        sys.exit(0 if many(url, key, int(sys.argv[4]), body, object_check) else 1)
    if command == "tool":
        try:
            tool_checks(url, key)
        except (ValueError, KeyError, IndexError) as error:
            sys.exit(f"tool calls: {error}")
        sys.exit(0)
    sys.exit(f"unknown command {command}")
