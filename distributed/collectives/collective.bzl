"""collective_library: the cc_library of one collective (<name>.h, <name>.cc)."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def collective_library(name, runs_in_area, deps = []):
    """One collective's library, used by //distributed:process_group.

    Args:
      name: the collective; its files are <name>.h and <name>.cc.
      runs_in_area: whether it has a shared-memory variant (then it depends
        on the group's area, and //distributed/shm's tests may drive that
        variant).
      deps: what else it uses.
    """
    common = [":collective_call", "//base:error"]
    area = [":group_area", "//distributed/shm:collective_area"] if runs_in_area else []
    cc_library(
        name = name,
        srcs = [name + ".cc"],
        hdrs = [name + ".h"],
        visibility = ["//distributed:__pkg__"] + (["//distributed/shm:__pkg__"] if runs_in_area else []),
        deps = common + area + deps,
    )
