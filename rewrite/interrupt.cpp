#include "rewrite/interrupt.hpp"

#include <atomic>

namespace ringrt {

namespace {
std::atomic<int> g_signal{0};  // 0: no request; else the first request's signal
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");
}  // namespace

void request_interrupt(int sig) noexcept {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
}

int interrupt_signal() noexcept { return g_signal.load(); }

void clear_interrupt() noexcept { g_signal.store(0); }

}  // namespace ringrt
