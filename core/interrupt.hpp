// Cooperative interruption (SIGINT/SIGTERM): a signal handler records a request to stop, and the long waits
// poll it. The `ringrt` program installs the handler for SIGINT and SIGTERM (runtime/cli/main.cpp) and
// its experiment runner stops between allreduces; the host compiler's child processes are killed when
// a stop is requested (codegen/compiler.cpp run_command), so a compile in progress ends within about
// 50 ms with an Interrupted error (core/errors.hpp) and its temporary folder is removed.
#pragma once

namespace ringrt {

// Records a request to stop, for signal `sig` (> 0); the first request is kept. Async-signal-safe: a
// lock-free atomic, so a signal handler may call it.
void request_interrupt(int sig) noexcept;
// The signal of the pending request to stop; 0 when there is none. Async-signal-safe.
int interrupt_signal() noexcept;
// Milliseconds since the pending request was recorded (CLOCK_MONOTONIC); -1 when there is none.
// Async-signal-safe.
long long interrupt_age_ms() noexcept;
// Forgets the request (tests).
void clear_interrupt() noexcept;

}  // namespace ringrt
