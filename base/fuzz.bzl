"""One macro for a libFuzzer target and the test that replays its seed corpus."""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_test")

def fuzzer_with_corpus_test(name, src, corpus, min_inputs, deps):
    """Declares `<name>_fuzzer` and `<name>_corpus_test`.

    `<name>_fuzzer` (tag manual) is the libFuzzer binary: build it with
    --config=fuzz and run it as tools/run_fuzzers.sh does. `<name>_corpus_test`
    links the same `src` with //base/testing:fuzz_corpus_main.cc, which replays
    every file of `corpus` (a folder of this package) through it in any build
    mode, and fails below `min_inputs` files.
    """
    package = native.package_name()
    cc_binary(
        name = name + "_fuzzer",
        srcs = [src],
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = deps,
    )
    cc_test(
        name = name + "_corpus_test",
        srcs = [src, "//base/testing:fuzz_corpus_main.cc"],
        args = [package + "/" + corpus, str(min_inputs)],
        data = native.glob([corpus + "/*"]),
        deps = deps,
    )
