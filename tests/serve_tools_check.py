"""The prompt transformers would render for a chat request, for
serve_tools_test.sh: Jinja2 as apply_chat_template sets it up (trim_blocks,
lstrip_blocks, tojson without sorting keys), with the request's messages (a
tool call's arguments parsed from their JSON text, null content as "") and,
unless tool_choice is "none", its tools.

  serve_tools_check.py TEMPLATE REQUEST.json   prints the prompt as the toy's byte-tokenizer ids
                                               (a byte's id is the byte + 3)
Exits 3 when jinja2 is missing (the caller skips the check).
"""
import json
import sys

try:
    import jinja2
except ImportError:
    sys.exit(3)


def render(template_path, request):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    template = env.from_string(open(template_path).read())
    messages = []
    for message in request["messages"]:
        message = dict(message)
        if message.get("content") is None:
            message["content"] = ""
        for call in message.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        messages.append(message)
    tools = request.get("tools") if request.get("tool_choice") != "none" else None
    return template.render(messages=messages, tools=tools, add_generation_prompt=True)


if __name__ == "__main__":
    print(" ".join(str(b + 3) for b in render(sys.argv[1], json.load(open(sys.argv[2]))).encode()))
