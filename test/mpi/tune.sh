#!/usr/bin/env bash
# `ringrt tune` under mpirun, as CTest mpi.cli_tune runs it: the choices across the job's ranks.
#   test/mpi/tune.sh MPIEXEC RINGRT_BINARY CONFIG
# 1. `mpirun -np 2 ringrt tune` measures naive, ring, all2all and mpi across the 2 ranks (one cpu device each) and
#    writes one file (the first rank of the host writes it) whose choices carry `ranks: 2`; exit 0.
# 2. `mpirun -np 2 ringrt run` with allreduce.tuning naming that file runs the file's choice at the size (its
#    algo column), every value right.
# 3. The in-process choices (no `ranks`) of the same file are kept by the tune across ranks, and are not used
#    across ranks: a file of in-process choices alone leaves the run to its untuned choice (mpi up to
#    allreduce.mpi_bytes), and the header says so.
# 4. allreduce.tuning off: tinygrad's rule across ranks, as in one process.
# 5. Untuned, the header's choice and the algo column agree: a reduction under a wire or deterministic mode, and
#    a reduce, take tinygrad's rule (naive); an allgather under deterministic mode takes mpi (it moves values).
# The Open MPI settings come from the environment (cmake/RingrtTests.cmake).
set -uo pipefail
mpiexec="$1"
ringrt="$2"
config="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
file="$work/tuning.yaml"
sizes=(--set devices.count=1 --set "experiment.counts=[256]" --set experiment.warmup=1 --set experiment.iters=2)
status=0
fail() {
  echo "FAIL: $*"
  status=1
}

# an in-process choice first (one process, 2 devices): the tune across ranks must keep it
"$ringrt" tune --out "$file" --collectives allreduce --set devices.count=2 --set "experiment.counts=[256]" \
  --rounds 1 >"$work/local.txt" 2>&1 || fail "the in-process tune failed: $(cat "$work/local.txt")"
"$mpiexec" -np 2 "$ringrt" tune --out "$file" --collectives allreduce "${sizes[@]}" >"$work/tune.txt" 2>&1
rc=$?
cat "$work/tune.txt"
[[ $rc -eq 0 ]] || fail "mpirun ringrt tune exited $rc"
grep -q "over the 2 ranks' 2 cpu devices" "$work/tune.txt" || fail "the header does not name the ranks"
cross=$(grep -c 'ranks: 2,' "$file")
local_choices=$(grep 'collective: allreduce' "$file" | grep -vc 'ranks:')
[[ $cross -eq 1 ]] || fail "expected 1 choice with ranks: 2, found $cross"
[[ $local_choices -eq 1 ]] || fail "the in-process choice was not kept ($local_choices)"
algo=$(sed -n 's/.*ranks: 2,.*algorithm: \([a-z0-9_]*\),.*/\1/p' "$file")
case "$algo" in naive | ring | all2all | mpi) ;; *) fail "the choice across ranks is '$algo'" ;; esac
grep 'ranks: 2,' "$file" | grep -q 'mpi: ' || fail "mpi was not measured"

out=$("$mpiexec" -np 2 "$ringrt" run "$config" --set allreduce.tuning="$file" "${sizes[@]}" 2>&1)
rc=$?
printf '%s\n' "$out"
[[ $rc -eq 0 ]] || fail "mpirun ringrt run with the file exited $rc"
printf '%s\n' "$out" | grep -Eq "^ +1024 +256 +float32 +sum +$algo " || fail "the run did not take the file's $algo"
printf '%s\n' "$out" | grep -q '^# #wrong in all: 0 OK$' || fail "wrong values"
printf '%s\n' "$out" | grep -q "algorithm choice: across 2 ranks, $file (ringrt tune" ||
  fail "the header does not name the file's choices across 2 ranks"

grep -v 'ranks: 2,' "$file" >"$work/local.yaml"
out=$("$mpiexec" -np 2 "$ringrt" run "$config" --set allreduce.tuning="$work/local.yaml" "${sizes[@]}" 2>&1)
printf '%s\n' "$out" | grep -Eq "^ +1024 +256 +float32 +sum +mpi " ||
  fail "an in-process choice was used across ranks: $(printf '%s\n' "$out" | grep ' sum ')"
printf '%s\n' "$out" | grep -q "(the tuning file has no choice across 2 ranks)" ||
  fail "the header does not say the file has no choice across 2 ranks"

# 4. allreduce.tuning off: tinygrad's rule across ranks too (naive on 2 devices), and the header says so
out=$("$mpiexec" -np 2 "$ringrt" run "$config" --set allreduce.tuning=off "${sizes[@]}" 2>&1)
printf '%s\n' "$out" | grep -Eq "^ +1024 +256 +float32 +sum +naive " || fail "tuning off did not give the rule"
printf '%s\n' "$out" | grep -q "algorithm choice: across 2 ranks, tinygrad's rule$" ||
  fail "the header under tuning off: $(printf '%s\n' "$out" | grep 'algorithm choice')"
# 5. the header names what runs (untuned: allreduce.tuning off would give the rule to all; a file-less cache instead)
export RINGRT_CACHE_DIR="$work/cache"
mkdir -m 700 "$RINGRT_CACHE_DIR"
while read -r sets want line; do
  # shellcheck disable=SC2086
  # (stdin from /dev/null: mpirun would read the rows)
  out=$("$mpiexec" -np 2 -x RINGRT_CACHE_DIR "$ringrt" run "$config" "${sizes[@]}" ${sets//|/ } 2>&1 </dev/null)
  op=$(printf '%s\n' "$out" | grep -Eo '^ +1024 +256 +float32 +[a-z]+ +[a-z0-9_]+ ' | awk '{print $5}')
  echo "${sets//|/ }: $op; $(printf '%s\n' "$out" | grep 'algorithm choice')"
  [[ "$op" == "$want" ]] || fail "$sets ran '$op', expected $want"
  printf '%s\n' "$out" | grep -q "algorithm choice: .*$line" ||
    fail "$sets: the header says $(printf '%s\n' "$out" | grep 'algorithm choice')"
done <<'ROWS'
--set=allreduce.wire=bfloat16 naive across 2 ranks, tinygrad's rule$
--set=allreduce.deterministic=true naive tinygrad's rule$
--set=experiment.collective=reduce naive across 2 ranks, tinygrad's rule$
--set=experiment.collective=allgather|--set=allreduce.deterministic=true mpi MPI's own (mpi) up to
ROWS
exit $status
