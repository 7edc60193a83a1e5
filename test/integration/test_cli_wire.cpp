// allreduce.wire end to end (docs/compressed-wire.md): the schedule's copies carry bfloat16 bytes, `ringrt run`
// checks against the wire's bound and prints each row's max abs/rel error, busbw counts the bytes that cross,
// the environment variable sets it, and a dtype or op it cannot apply to is refused (exit status 2).
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli_wire)

using namespace ringrt::test;

namespace {

// The bytes of the ring's copies in `schedule --json`, whose "wire" must be `wire`.
int64_t copied_bytes(const std::string& wire, const std::vector<std::string>& extra,
                     const std::vector<std::string>& env = {}) {
  std::vector<std::string> args{"schedule", "configs/default.yaml", "--count", "400", "--json",
                                "--set",    "allreduce.ring=2"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult r = run_cli(args, env);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  int64_t bytes = 0;
  nlohmann::json j = nlohmann::json::parse(r.out);
  BOOST_TEST(j["wire"] == wire);
  for (const auto& c : j["copies"]) bytes += c["bytes"].get<int64_t>();
  return bytes;
}

}  // namespace

// The ring's 24 copies of float32 chunks move 2 bytes an element on the bfloat16 wire, set by --set or the
// environment, and a byte an element plus a scale byte per 32 on the FP8 wires.
BOOST_AUTO_TEST_CASE(copies_cross_in_the_wire_format) {
  BOOST_TEST(copied_bytes("native", {}) == 2 * 3 * 400 * 4);
  BOOST_TEST(copied_bytes("bfloat16", {"--set", "allreduce.wire=bfloat16"}) == 2 * 3 * 400 * 2);
  BOOST_TEST(copied_bytes("bfloat16", {}, {"RINGRT_ALLREDUCE_WIRE=bfloat16"}) == 2 * 3 * 400 * 2);
  // FP8: a byte an element and a scale byte per block of 32, codes and scales apart; the chunks are cut at
  // multiples of 32 (allreduce_chunks), so each step's 4 chunks hold ceil(400 / 32) = 13 blocks
  for (const char* fp8 : {"fp8_e4m3", "fp8_e5m2"})
    BOOST_TEST(copied_bytes(fp8, {"--set", std::string("allreduce.wire=") + fp8}) == 2 * 3 * (400 + 13));
  CliResult text = run_cli({"schedule", "configs/default.yaml", "--count", "400", "--set", "allreduce.wire=bfloat16"});
  BOOST_TEST(text.out.find(", wire bfloat16\n") != std::string::npos, text.out);
}

// check on: #wrong 0 against the wire's bound, the error columns with nonzero errors (float32 sums round on
// the wire); native prints no error columns.
BOOST_AUTO_TEST_CASE(run_reports_errors_within_the_bound) {
  std::vector<std::string> args{"run",   "configs/default.yaml",    "--set", "experiment.sizes.max=16KiB",
                                "--set", "experiment.iters=1",      "--set", "experiment.warmup=0",
                                "--set", "allreduce.algorithm=ring"};
  CliResult native = run_cli(args);
  BOOST_TEST_REQUIRE(native.status == 0, native.err);
  BOOST_TEST(native.out.find("maxabs") == std::string::npos);
  args.insert(args.end(), {"--set", "allreduce.wire=bfloat16"});
  CliResult wired = run_cli(args);
  BOOST_TEST_REQUIRE(wired.status == 0, wired.err + wired.out);
  BOOST_TEST(wired.out.find("maxabs    maxrel") != std::string::npos, wired.out);
  BOOST_TEST(wired.out.find("#wrong in all: 0 OK") != std::string::npos, wired.out);
  BOOST_TEST(wired.out.find("allreduce.wire = bfloat16") != std::string::npos, wired.out);
  CliResult chosen = run_cli({"run", "configs/default.yaml", "--set", "experiment.sizes.max=1KiB", "--set",
                              "experiment.iters=1", "--set", "allreduce.wire=bfloat16"});
  BOOST_TEST(chosen.status == 0, chosen.err);
  BOOST_TEST(wired.out.find(" 0  0.00e+00") == std::string::npos, wired.out);  // every row rounded somewhere
  TempDir dir;
  for (const char* fp8 : {"fp8_e4m3", "fp8_e5m2"}) {  // the FP8 wires, checked against their own bound
    std::vector<std::string> a = args;
    a.back() = std::string("allreduce.wire=") + fp8;
    std::string csv = (dir.path() / (std::string(fp8) + ".csv")).string();
    std::string js = (dir.path() / (std::string(fp8) + ".json")).string();
    a.insert(a.end(), {"--csv", csv, "--json", js});
    CliResult r = run_cli(a);
    BOOST_TEST_REQUIRE(r.status == 0, r.err + r.out);
    BOOST_TEST(r.out.find("#wrong in all: 0 OK") != std::string::npos, r.out);
    BOOST_TEST(r.out.find(std::string("allreduce.wire = ") + fp8) != std::string::npos, r.out);
    // the errors in the CSV's and JSON's last columns: positive (FP8 rounds every row) and at most the sum's
    // magnitude (the inputs are of order 1 on 4 devices, so any error of the wire's bound is far below 100)
    nlohmann::json j = nlohmann::json::parse(read_file(js));  // kept: the loop must not outlive it
    BOOST_TEST(j["wire"] == fp8);
    BOOST_TEST(j["deterministic"] == false);
    BOOST_TEST_REQUIRE(!j["rows"].empty());
    for (const auto& row : j["rows"]) {
      double e = row["max_abs_err"].get<double>();
      BOOST_TEST((e > 0 && e < 100), e);
      BOOST_TEST(row["max_rel_err"].get<double>() > 0);
    }
    std::string text = read_file(csv);
    BOOST_TEST(text.find(",max_abs_err,max_rel_err\n") != std::string::npos);
    BOOST_TEST(text.find("e-0") != std::string::npos, text);  // an error written in the last columns
  }
}

// FSDP steps over an FP8 wire: the reduce_scatter rows carry their measured errors (in the JSON), the allgather
// rows (which the wire leaves) none; every row within its bound (#wrong 0).
BOOST_AUTO_TEST_CASE(fsdp_reduce_scatter_rows_report_their_errors) {
  TempDir dir;
  std::string js = (dir.path() / "fsdp.json").string();
  std::vector<std::string> args = small_run("configs/fsdp-gpt2-small.yaml");
  args.insert(args.end(), {"--set", "allreduce.wire=fp8_e4m3", "--json", js});
  CliResult r = run_cli(args);
  BOOST_TEST_REQUIRE(r.status == 0, r.err + r.out);
  int scattered = 0;
  nlohmann::json j = nlohmann::json::parse(read_file(js));  // kept: the loop must not outlive it
  for (const auto& row : j["rows"]) {
    BOOST_TEST(row["wrong"] == 0);
    if (row["collective"] == "reduce_scatter") {
      ++scattered;
      BOOST_TEST(row["max_abs_err"].get<double>() > 0);
    } else {
      BOOST_TEST(row["max_abs_err"].is_null());
    }
  }
  BOOST_TEST(scattered == 3);
}

// `ringrt config` refuses what run would, before anything is printed: the wire against the experiment's
// collective, dtype and op.
BOOST_AUTO_TEST_CASE(config_refuses_a_wire_that_cannot_apply) {
  CliResult r =
      run_cli({"config", "configs/default.yaml", "--set", "allreduce.wire=fp8_e4m3", "--set", "experiment.op=max"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.empty(), r.out);
  BOOST_TEST(r.err.find("allreduce of float32 (max): allreduce.wire fp8_e4m3 applies to sum only") != std::string::npos,
             r.err);
  r = run_cli(
      {"config", "configs/default.yaml", "--set", "allreduce.wire=bfloat16", "--set", "experiment.dtype=int32"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("allreduce.wire bfloat16 applies to float32 and bfloat16 only") != std::string::npos, r.err);
  r = run_cli({"config", "configs/default.yaml", "--set", "allreduce.wire=fp8_e4m3", "--set",
               "experiment.collective=allgather", "--set", "experiment.dtype=int32"});
  BOOST_TEST(r.status == 0, r.err);  // the wire leaves an allgather
}

BOOST_AUTO_TEST_CASE(refused_where_it_cannot_apply) {
  CliResult r = run_cli({"run", "configs/default.yaml", "--set", "experiment.sizes.max=4KiB", "--set",
                         "experiment.dtype=int32", "--set", "allreduce.wire=bfloat16"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("allreduce of int32 (sum): allreduce.wire bfloat16 applies to float32 and bfloat16 only") !=
                 std::string::npos,
             r.err);
  r = run_cli({"run", "configs/default.yaml", "--set", "experiment.sizes.max=4KiB", "--set", "experiment.op=max",
               "--set", "allreduce.wire=fp8_e5m2"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("allreduce.wire fp8_e5m2 applies to sum only") != std::string::npos, r.err);
  r = run_cli({"run", "configs/default.yaml", "--set", "allreduce.wire=fp4"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("allreduce.wire") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_SUITE_END()
