#!/usr/bin/env bash
# ringrt_add_boost_tests (cmake/RingrtTesting.cmake) refuses its misuse at configure time, naming it: a
# keyword without a value, an ENVIRONMENT value the generated test file cannot hold, a label with '|', a
# second call for one target. A well-formed call configures. Usage: add_boost_tests_misuse.sh SOURCE_DIR WORK_DIR
set -u
src="$1" work="$2"
fail=0
check() {  # check WANT ARGS: configure a project calling ringrt_add_boost_tests(t ARGS); WANT: "ok" or a message part
  local want="$1" args="$2"
  rm -rf "$work/p" "$work/b" && mkdir -p "$work/p"
  echo 'int main() { return 0; }' >"$work/p/m.cpp"
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(x CXX)\ninclude("%s/cmake/RingrtTesting.cmake")\nadd_executable(t m.cpp)\nringrt_add_boost_tests(t %s)\n' \
    "$src" "$args" >"$work/p/CMakeLists.txt"
  out=$(cmake -S "$work/p" -B "$work/b" 2>&1)
  rc=$?
  if [ "$want" = ok ]; then
    [ $rc -eq 0 ] || { echo "FAIL: '$args' did not configure:"; echo "$out"; fail=1; }
  elif [ $rc -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: '$args': exit $rc, want an error with '$want':"; echo "$out"; fail=1
  fi
}
check ok 'LABELS unit ENVIRONMENT "A=b c" "B=x=y" TIMEOUT 5'
check "TIMEOUT given without a value" 'TIMEOUT'
check "is not VAR=value" 'ENVIRONMENT "A=x\\\\"'
check "is not VAR=value" 'ENVIRONMENT "A=]==]"'
check "is not VAR=value" 'ENVIRONMENT "A=a|b"'
check "holds '|'" 'LABELS "a|b"'
check "called twice for one target" 'LABELS a)
ringrt_add_boost_tests(t LABELS b'
exit $fail
