#!/usr/bin/env bash
echo "coverage is not available in this offline build (see third_party/remote_coverage_tools)" >&2
exit 1
