#!/usr/bin/env python3
"""Checks the tree's structure, as .ci/run does; prints each violation and exits 1 if any.

1. Package order (docs/architecture.md): a C++ file of package P includes headers only of P
   and of the packages before P in ORDER; kernels/ libraries include nothing of loader/ or
   model/, and engine/ libraries nothing of distributed/ or text/ (tests may).
2. Sizes: no class or struct over 400 lines and no function over 150 (from the line of the
   opening brace to the line of the closing one), found by matching braces in the code with
   comments and literals blanked.
3. tools/ holds main()s: no cc_library in tools/BUILD or tools/*/BUILD.
"""
import re
import subprocess
import sys

ORDER = ["base", "tensor", "model", "loader", "text", "distributed", "kernels", "engine", "runtime",
         "launch", "bench", "server", "tools", "tests"]
FORBIDDEN_IN_LIBRARIES = {
    "kernels": {"loader", "model"},
    "engine": {"distributed", "text"},
}
MAX_LINES = {"class": 400, "function": 150}

COMMENT_OR_LITERAL = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
CONTROL = re.compile(r"^(if|for|while|switch|catch|else if|do)\b")
LAMBDA = re.compile(r"\]\s*(\([^()]*\))?\s*(mutable)?\s*(->[^{]*)?$")


def is_test_file(path):
    return re.search(r"(_test|_fuzzer|_benchmark|_check)\.cc$|/testing/", path) is not None


def check_includes(path, text):
    package = path.split("/")[0]
    problems = []
    for number, line in enumerate(text.split("\n"), 1):
        match = re.match(r'#include "([a-z_]+)/', line)
        if not match or match.group(1) not in ORDER:
            continue
        dependency = match.group(1)
        if ORDER.index(dependency) > ORDER.index(package):
            problems.append(f"{path}:{number}: {package}/ includes {dependency}/, a package after it")
        elif not is_test_file(path) and dependency in FORBIDDEN_IN_LIBRARIES.get(package, ()):
            problems.append(f"{path}:{number}: {package}/ must not include {dependency}/")
    return problems


def kind_of_block(head):
    head = " ".join(head.split())
    if re.search(r"\b(class|struct)\s+\w+[^()]*$", head) and not head.startswith("enum"):
        return "class"
    if CONTROL.match(head) or LAMBDA.search(head):
        return None
    if re.search(r"\)\s*(const|override|noexcept|final|\s)*(->[^{]*)?$", head) or re.search(r"\)\s*:\s", head):
        return "function"
    return None


def check_sizes(path, text):
    code = COMMENT_OR_LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    problems, stack, statement_start = [], [], 0
    for match in re.finditer(r"[{};]", code):
        position = match.start()
        if match.group(0) == "{":
            stack.append((kind_of_block(code[statement_start:position].strip()), position,
                          " ".join(code[statement_start:position].split())[-80:]))
        elif match.group(0) == "}" and stack:
            kind, opened, head = stack.pop()
            lines = code.count("\n", opened, position) + 1
            if kind and lines > MAX_LINES[kind]:
                first = code.count("\n", 0, opened) + 1
                problems.append(f"{path}:{first}: {kind} of {lines} lines (at most {MAX_LINES[kind]}): {head}")
        statement_start = position + 1
    return problems


def main():
    files = subprocess.check_output(["git", "ls-files", "*.cc", "*.h", "*.inc"], text=True).split()
    problems = []
    for path in files:
        if path.split("/")[0] not in ORDER:
            if not path.startswith("third_party/"):
                problems.append(f"{path}: in no package of the order (tools/check_structure.py ORDER)")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        problems += check_includes(path, text)
        problems += check_sizes(path, text)
    builds = subprocess.check_output(["git", "ls-files", "tools/BUILD", "tools/*/BUILD"], text=True).split()
    for build in builds:
        with open(build, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.startswith("cc_library("):
                    problems.append(f"{build}:{number}: a cc_library in tools/, which holds main()s only")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
