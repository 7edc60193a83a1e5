#include "core/interrupt.hpp"

#include <time.h>

#include <atomic>

namespace ringrt {

namespace {
std::atomic<int> g_signal{0};              // 0: no request; else the first request's signal
std::atomic<long long> g_requested_ms{0};  // when it was recorded, CLOCK_MONOTONIC
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");
static_assert(std::atomic<long long>::is_always_lock_free, "a signal handler may only touch lock-free atomics");

long long now_ms() noexcept {  // clock_gettime is async-signal-safe (POSIX)
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}
}  // namespace

void request_interrupt(int sig) noexcept {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) g_requested_ms.store(now_ms());
}

int interrupt_signal() noexcept { return g_signal.load(); }

long long interrupt_age_ms() noexcept { return g_signal.load() == 0 ? -1 : now_ms() - g_requested_ms.load(); }

void clear_interrupt() noexcept { g_signal.store(0); }

}  // namespace ringrt
