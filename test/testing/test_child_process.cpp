// RINGRT_RUN_IN_CHILD (test/support/checks.hpp): a case run again in a child process, whose outcome the parent
// reports; a child that skipped the case (a precondition false there) is told from one that ran it, so the
// parent reports an error, not a pass.
#include <boost/test/unit_test.hpp>

#include "test/support/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_child_process)

namespace {
struct NotInChild {  // true in this process, false in a child of run_case_in_child
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(!ringrt::test::in_child());
    r.message() << "in the child process";
    return r;
  }
};
}  // namespace

// Passes where it runs; skipped in a child (its precondition).
BOOST_AUTO_TEST_CASE(passes_here_skips_in_a_child, *boost::unit_test::precondition(NotInChild{})) {
  BOOST_TEST(!ringrt::test::in_child());
}

BOOST_AUTO_TEST_CASE(runs_anywhere) { BOOST_TEST(true); }

// The child that skipped its case exits 0 like one that ran it; child_ran_the_case tells them apart (what
// check_current_case_in_child reports as an error).
BOOST_AUTO_TEST_CASE(a_child_that_skipped_is_told_from_one_that_ran) {
  ringrt::test::ChildRun skipped = ringrt::test::run_case_in_child("test_child_process/passes_here_skips_in_a_child");
  BOOST_TEST((WIFEXITED(skipped.status) && WEXITSTATUS(skipped.status) == 0), skipped.status);
  BOOST_TEST(!ringrt::test::child_ran_the_case(skipped));
  ringrt::test::ChildRun ran = ringrt::test::run_case_in_child("test_child_process/runs_anywhere");
  BOOST_TEST(ringrt::test::child_ran_the_case(ran));
}

BOOST_AUTO_TEST_SUITE_END()
