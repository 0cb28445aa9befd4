// The two clocks the addon reads. Durations (polls, write timings) are measured on the monotonic
// clock, which a step of the wall clock does not move; times stamped on files come from the wall
// clock as it reads at that moment (CLOCK_REALTIME), never from a start time plus a duration.
#pragma once

#include <cstdint>
#include <ctime>

namespace layerfs {

inline int64_t ClockNs(clockid_t clock) {
  struct timespec t {};
  clock_gettime(clock, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

inline int64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }

inline int64_t RealtimeNs() { return ClockNs(CLOCK_REALTIME); }

}  // namespace layerfs
