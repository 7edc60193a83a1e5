// RINGRT_RUN_IN_CHILD (test/support/checks.hpp): a case run again in a child process, whose outcome the
// parent reports; a child that skipped the case is an error, not a pass.
#include <boost/test/unit_test.hpp>

#include "test/support/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_child_process)

namespace {
struct NotInChild {  // true in this process, false in a child of RINGRT_RUN_IN_CHILD
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(!ringrt::test::in_child());
    r.message() << "in the child process";
    return r;
  }
};
}  // namespace

// RINGRT_RUN_IN_CHILD's child that skips the case (a precondition true here, false there: devices that vanish
// in the child) is an error of the parent, not a pass (test/support/checks.hpp): exactly one error expected.
BOOST_AUTO_TEST_CASE(a_child_that_skipped_is_an_error,
                     *boost::unit_test::precondition(NotInChild{}) * boost::unit_test::expected_failures(1)) {
  RINGRT_RUN_IN_CHILD();
  BOOST_TEST(false);  // never reached: the child skips the case
}

BOOST_AUTO_TEST_SUITE_END()
