"""sh_tests that run //tools:infer jobs on the toy model through //tools:launch."""

_INFER_JOB_TOOLS = [
    "//tools:launch",
    "//tools:infer",
    "//tools:make_toy_model",
]

def infer_job_test(name, script, extra_args = [], extra_data = [], **kwargs):
    """An sh_test whose script gets LAUNCH INFER MAKE_TOY_MODEL, then extra_args,
    and may source tests/test_lib.sh.

    Args:
      name: the test's name.
      script: the test script.
      extra_args: arguments after the three tool paths.
      extra_data: data the extra arguments refer to.
      **kwargs: passed on to sh_test (tags, size, ...).
    """
    native.sh_test(
        name = name,
        size = kwargs.pop("size", "medium"),
        srcs = [script],
        args = ["$(location %s)" % tool for tool in _INFER_JOB_TOOLS] + extra_args,
        data = _INFER_JOB_TOOLS + extra_data,
        deps = ["//tests:test_lib"],
        **kwargs
    )
