#!/usr/bin/env bash
# Faults across MPI ranks, as CTest mpi.faults runs them: a job ends with a clear
# status and message on every surviving rank, never a hang.
#   test/mpi/faults.sh RINGRT_BINARY CONFIG_DIR
# 0. A rank that never starts MPI: a TimeoutError, exit 3; ranks_per_host differing: exit 2 on every rank.
# 1b. Ranks that run different numbers of rows: exit 2 on both, at once.
# 1. A plan that differs between ranks (MPMD: rank 1 forces ring): exit 2, every rank names the mismatch.
# 2. A rank that stops answering (SIGSTOP mid-run): the others' watchdog fires: exit 3 (MPI_Abort), a
#    TimeoutError naming the item, the peer rank and the run's sequence number.
# 3. A rank killed mid-run (SIGKILL), mpirun told not to kill the job at once: every survivor reports
#    the TimeoutError (a failing rank waits a second before MPI_Abort so that all do), and the job ends
#    non-zero.
# 4. SIGTERM to the ranks waiting inside MPI for a stopped rank: the waits end at once (not at the
#    watchdog), each reports the stop and exits 143, and the job ends.
# The Open MPI settings come from the environment (cmake/RingrtTests.cmake).
set -uo pipefail
ringrt="$1"
configs="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# failures are lines in a file: the start-up and mismatch scenarios run at once, in subshells
fail() {
  echo "FAIL: $*" | tee -a "$work/failures"
}
sweep=(run "$configs/ring.yaml" --set devices.count=1 --set experiment.sizes.max=4KiB)

# 0. start-up: a rank that never starts MPI (here: not ringrt at all) is a timeout on the others (the
#    longer of the watchdog and runtime.mpi_start_s), exit 3;
#    ranks that differ in runtime.ranks_per_host are a ConfigError on every rank, exit 2
never_starts() {
  local rc
  timeout 120 mpirun -np 1 "$ringrt" "${sweep[@]}" --set runtime.watchdog_s=1 --set runtime.mpi_start_s=3 : \
    -np 1 sleep 60 >"$work/start.out" 2>&1
  rc=$?
  [[ $rc == 3 ]] || fail "a rank that never starts: exit $rc, expected 3"
  grep -q "rank 0: timeout: MPI did not start within 3000 ms" "$work/start.out" ||
    fail "a rank that never starts: no TimeoutError (the config's runtime.mpi_start_s, naming the rank)"
}
per_host_mismatch() {
  local rc
  timeout 120 mpirun -np 1 "$ringrt" "${sweep[@]}" --set runtime.ranks_per_host=2 : \
    -np 1 "$ringrt" "${sweep[@]}" >"$work/per_host.out" 2>&1
  rc=$?
  [[ $rc == 2 ]] || fail "ranks_per_host mismatch: exit $rc, expected 2"
  [[ $(grep -c "the ranks differ in runtime.ranks_per_host" "$work/per_host.out") == 2 ]] ||
    fail "ranks_per_host mismatch: not reported by both ranks"
}

# 1. plan mismatch
plan_mismatch() {
  local rc
  timeout 120 mpirun -np 1 "$ringrt" "${sweep[@]}" --set allreduce.ring=0 : \
    -np 1 "$ringrt" "${sweep[@]}" --set allreduce.ring=2 >"$work/mismatch.out" 2>&1
  rc=$?
  [[ $rc == 2 ]] || fail "plan mismatch: exit $rc, expected 2"
  for r in 0 1; do
    grep -q "rank $r: .*the ranks differ in the plan" "$work/mismatch.out" || fail "plan mismatch: rank $r did not say so"
  done
}

# 1b. ranks that run different numbers of rows: the one that ends first meets the other's next run at
#     its exit: a ConfigError on both, exit 2, at once (not the watchdog's minute)
different_rows() {
  local rc rows
  rows=(run "$configs/ring.yaml" --set devices.count=1)
  timeout 120 mpirun -np 1 "$ringrt" "${rows[@]}" --set "experiment.counts=[7,1000]" : \
    -np 1 "$ringrt" "${rows[@]}" --set "experiment.counts=[7]" >"$work/rows.out" 2>&1
  rc=$?
  [[ $rc == 2 ]] || fail "different rows: exit $rc, expected 2"
  [[ $(grep -c "the ranks are at different calls" "$work/rows.out") == 2 ]] ||
    fail "different rows: not reported by both ranks"
}

# each mostly waits (a start-up timeout, mpirun's start): they run at once
never_starts &
per_host_mismatch &
plan_mismatch &
different_rows &
wait

# Starts a long sweep over 3 ranks in the background (watchdog ${watchdog:-3} s); sets job_pid, rank_pid (rank 1's
# process) and other_pids (ranks 0 and 2).
start_long_job() {
  RINGRT_WATCHDOG_S=${watchdog:-3} timeout 120 mpirun -np 3 "$ringrt" run "$configs/ring.yaml" --set devices.count=1 \
    --set experiment.sizes.max=4KiB --set experiment.iters=1000000 >"$work/$1.out" 2>&1 &
  job_pid=$!
  rank_pid=""
  for _ in $(seq 150); do  # rank 0 prints the table header once every rank runs MPI
    sleep 0.2
    local mpirun_pid
    mpirun_pid=$(pgrep -P "$job_pid" -x mpirun)
    # rank 1 by its rank (Open MPI puts OMPI_COMM_WORLD_RANK in each rank's environment), not by pgrep's order
    rank_pid=""
    other_pids=()
    if [[ -n "$mpirun_pid" ]]; then
      for p in $(pgrep -P "$mpirun_pid"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
          rank_pid=$p
        else
          other_pids+=("$p")
        fi
      done
    fi
    if [[ -n "$rank_pid" ]] && grep -q '^#  *size' "$work/$1.out"; then
      sleep 2  # allreduces in flight
      return 0
    fi
  done
  fail "$1: the job did not start"
}

# 2. a rank that stops answering
start_long_job stopped
[[ -n "$rank_pid" ]] && kill -STOP "$rank_pid"
wait "$job_pid"
rc=$?
[[ $rc == 3 ]] || fail "stopped rank: exit $rc, expected 3"
# waiting on a copy: the item, the peer and the run; waiting at the next run's agreement: the run and the rank
grep -Eq "rank [02]: timeout: (item [0-9]+ \(copy .*\) .*: a (receive from|send to) rank [0-9] in multi-rank run [0-9]+ did not complete within 3000 ms|the plan of run [0-9]+ .*: rank\(s\) 1 did not arrive within 3000 ms)" \
  "$work/stopped.out" || fail "stopped rank: no TimeoutError naming the item or run and the peer rank"

# 3. a rank killed
export OMPI_MCA_orte_abort_on_non_zero_status=0
start_long_job killed
[[ -n "$rank_pid" ]] && kill -KILL "$rank_pid"
wait "$job_pid"
rc=$?
[[ $rc != 0 && $rc != 124 ]] || fail "killed rank: exit $rc, expected a failure before the timeout"
# (the kill may land inside a run's transfers or between runs, at the next run's plan check: either is
# a TimeoutError naming the run and the peer rank, as for the stopped rank)
for r in 0 2; do
  grep -Eq "rank $r: timeout: (item [0-9]+ .* rank [0-9] in multi-rank run [0-9]+|the plan of run [0-9]+ .*: rank\(s\) 1 did not arrive within 3000 ms)" \
    "$work/killed.out" || fail "killed rank: rank $r did not report a TimeoutError"
done

# 4. a stop during MPI waits: rank 1 stops answering (SIGSTOP), so ranks 0 and 2 wait for it inside MPI (a
#    transfer, a run's plan check); SIGTERM to them ends their waits at once, not at the watchdog (a minute
#    here): each reports the stop and exits 143, and mpirun ends the job (abort_on_non_zero_status back on)
export OMPI_MCA_orte_abort_on_non_zero_status=1
watchdog=60 start_long_job interrupted
if [[ -n "$rank_pid" ]]; then
  kill -STOP "$rank_pid"
  sleep 1  # ranks 0 and 2 now wait for rank 1
  signalled=$(date +%s%N)
  kill -TERM "${other_pids[@]}"
  wait "$job_pid"
  rc=$?
  ended=$((($(date +%s%N) - signalled) / 1000000))
  kill -KILL "$rank_pid" 2>/dev/null
  echo "faults: a stop during MPI waits ended the job in $ended ms (mpirun exit $rc)"
  ((ended < 30000)) || fail "stop during MPI waits: the job took $ended ms to end (the watchdog's 60 s, not the stop)"
  [[ $rc != 0 && $rc != 124 ]] || fail "stop during MPI waits: mpirun exit $rc, expected a failure before the timeout"
  for r in 0 2; do
    grep -Eq "rank $r: (interrupted by SIGTERM|stopped by signal 15)" "$work/interrupted.out" ||
      fail "stop during MPI waits: rank $r did not report the stop"
  done
  ! grep -q "timeout:" "$work/interrupted.out" || fail "stop during MPI waits: a timeout was reported"
fi

if [[ -s "$work/failures" ]]; then
  for f in "$work"/*.out; do
    echo "---- $f"
    grep -v '^#' "$f" | tail -20
  done
  exit 1
fi
echo "faults: start-up, plan mismatch, stopped rank, killed rank and a stop during MPI waits all ended cleanly"
