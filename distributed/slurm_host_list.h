// SlurmHostList: expands Slurm's compressed host lists, as in
// SLURM_JOB_NODELIST or SLURM_STEP_NODELIST: comma-separated host names, each
// with any number of bracketed ranges, e.g. "node[01-03,07],gpu-a,r[1-2]n[5,6]"
// -> node01 node02 node03 node07 gpu-a r1n5 r1n6 r2n5 r2n6. A range keeps the
// zero padding of its lower bound ("[08-10]" -> 08 09 10); a name with
// several bracket groups expands to their product, leftmost group slowest.
//
// Thread-safety: free functions on values; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace inferno {

// The hosts of `list` in order, at most `max_hosts` of them. Errors
// (InvalidArgument quoting the list and saying what is wrong): an empty list
// or host name, an unclosed or nested '[', a ']' without '[', a range bound
// that is not a number, a range whose upper bound is below its lower bound,
// more than `max_hosts` hosts.
Result<std::vector<std::string>> ExpandSlurmHostList(std::string_view list, size_t max_hosts = 1 << 16);

}  // namespace inferno
