"""sh_tests that run //tools:serve jobs through //tools:launch with a client."""

def serve_job_test(name, script, client, tools = ["//tools:make_toy_model"], **kwargs):
    """An sh_test whose script gets LAUNCH SERVE, then the paths of `tools`,
    then CLIENT's, and may source tests/test_lib.sh and tests/serve_lib.sh.

    Args:
      name: the test's name.
      script: the test script.
      client: the client program (a file of this package); it may import
        serve_sse (tests/serve_sse.py), which is in the runfiles beside it.
      tools: more binaries the script runs, in the order it takes them.
      **kwargs: passed on to sh_test (size, tags, ...).
    """
    binaries = ["//tools:launch", "//tools:serve"] + tools
    native.sh_test(
        name = name,
        size = kwargs.pop("size", "large"),
        srcs = [script],
        args = ["$(location %s)" % target for target in binaries + [client]],
        data = binaries + [client, ":serve_sse.py"],
        deps = [
            ":serve_lib",
            ":test_lib",
        ],
        **kwargs
    )
