// configs/ddp-gpt2-small.yaml holds the gradient buckets of GPT-2 small, configs/fsdp-gpt2-small.yaml
// its FSDP units. This test recomputes both from the model's parameter shapes with the rules of
// scripts/gpt2_buckets.py (DDP: reverse parameter order, float32, at most 25 MiB per bucket, a larger
// tensor alone; FSDP: one unit per block, the rest in the root, backward order) and checks the
// parameter count; then runs FSDP's steps small, in process and through `ringrt run`, and checks what
// they ran.
// Reference: GPT-2 small (Hugging Face `gpt2`, GPT2LMHeadModel.named_parameters()); PyTorch DDP
// bucket_cap_mb = 25; PyTorch FSDP (transformer auto-wrap per GPT2Block, ShardingStrategy).
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/cli/config.hpp"
#include "runtime/cli/experiment.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_gpt2_workloads)

using namespace ringrt;
using namespace ringrt::test;

namespace {

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel() const { return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()); }
};

// GPT-2 small's parameter tensors in definition order (lm_head is tied to wte).
std::vector<Param> gpt2_small() {
  const int64_t d = 768, vocab = 50257, ctx = 1024, layers = 12;
  std::vector<Param> p{{"wte", {vocab, d}}, {"wpe", {ctx, d}}};
  for (int64_t i = 0; i < layers; ++i) {
    std::string h = "h." + std::to_string(i) + ".";
    std::vector<Param> block{{h + "ln_1.weight", {d}},
                             {h + "ln_1.bias", {d}},
                             {h + "attn.c_attn.weight", {d, 3 * d}},
                             {h + "attn.c_attn.bias", {3 * d}},
                             {h + "attn.c_proj.weight", {d, d}},
                             {h + "attn.c_proj.bias", {d}},
                             {h + "ln_2.weight", {d}},
                             {h + "ln_2.bias", {d}},
                             {h + "mlp.c_fc.weight", {d, 4 * d}},
                             {h + "mlp.c_fc.bias", {4 * d}},
                             {h + "mlp.c_proj.weight", {4 * d, d}},
                             {h + "mlp.c_proj.bias", {d}}};
    p.insert(p.end(), block.begin(), block.end());
  }
  p.push_back({"ln_f.weight", {d}});
  p.push_back({"ln_f.bias", {d}});
  return p;
}

// Element counts of the buckets: reverse order, each at most cap bytes unless one tensor is larger.
std::vector<int64_t> buckets(const std::vector<Param>& params, int64_t cap_bytes, int64_t itemsize) {
  std::vector<int64_t> out;
  int64_t open = 0;  // bytes in the open bucket
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    int64_t bytes = it->numel() * itemsize;
    if (open > 0 && open + bytes > cap_bytes) {
      out.push_back(open / itemsize);
      open = 0;
    }
    open += bytes;
  }
  if (open > 0) out.push_back(open / itemsize);
  return out;
}

// FSDP units: block h.i's tensors in one unit each, in backward order (h.11 first), then the root (the rest).
std::vector<int64_t> fsdp_units(const std::vector<Param>& params) {
  std::vector<int64_t> blocks(12, 0);
  int64_t root = 0;
  for (const Param& p : params) {
    if (p.name.rfind("h.", 0) == 0)
      blocks[static_cast<size_t>(std::stoi(p.name.substr(2)))] += p.numel();
    else
      root += p.numel();
  }
  std::vector<int64_t> out(blocks.rbegin(), blocks.rend());
  out.push_back(root);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(gpt2_small_has_124439808_parameters) {
  std::vector<Param> p = gpt2_small();
  BOOST_TEST(p.size() == 2u + 12u * 12u + 2u);
  int64_t total = 0;
  for (const Param& x : p) total += x.numel();
  BOOST_TEST(total == 124439808);
}

BOOST_AUTO_TEST_CASE(config_holds_the_recomputed_buckets) {
  const int64_t cap = int64_t{25} << 20;
  std::vector<int64_t> want = buckets(gpt2_small(), cap, 4);
  ExperimentConfig cfg = load_config(std::string(RINGRT_SOURCE_DIR) + "/configs/ddp-gpt2-small.yaml");
  BOOST_TEST((cfg.form == SweepForm::buckets));
  BOOST_TEST((cfg.dtype == DType::float32));
  BOOST_TEST(cfg.op_name == "sum");
  BOOST_TEST(cfg.in_place);  // persistent buckets written from the host, allreduced in place (DDP's form)
  BOOST_TEST(cfg.counts == want, boost::test_tools::per_element());
  BOOST_TEST(std::accumulate(cfg.counts.begin(), cfg.counts.end(), int64_t{0}) == 124439808);
  for (size_t i = 0; i < want.size(); ++i)  // only wte (38.6M elements, 147 MiB) exceeds the cap
    BOOST_TEST((want[i] * 4 <= cap || want[i] == 50257 * 768), i);
  BOOST_TEST(want.back() == 50257 * 768);  // the embedding's gradient is produced last
}

BOOST_AUTO_TEST_CASE(fsdp_config_holds_the_recomputed_units) {
  std::vector<int64_t> want = fsdp_units(gpt2_small());
  ExperimentConfig cfg = load_config(std::string(RINGRT_SOURCE_DIR) + "/configs/fsdp-gpt2-small.yaml");
  BOOST_TEST((cfg.form == SweepForm::buckets));
  BOOST_TEST(cfg.sharding == "full_shard");
  BOOST_TEST((cfg.dtype == DType::float32));
  BOOST_TEST(cfg.counts == want, boost::test_tools::per_element());
  BOOST_TEST(std::accumulate(cfg.counts.begin(), cfg.counts.end(), int64_t{0}) == 124439808);
  BOOST_TEST(want.back() == 50257 * 768 + 1024 * 768 + 2 * 768);  // the root: wte, wpe, ln_f
}

// FSDP's steps on 3 cpu devices, units [10, 7, 2] (padded to 12, 9, 3): full_shard gathers in forward
// (root first) and again in backward (not the root), reduce-scatters every unit; shard_grad_op gathers
// once. Every row checked against the host (#wrong 0); a corrupted element is found in every row.
BOOST_AUTO_TEST_CASE(fsdp_steps_run_every_collective_checked) {
  struct Want {
    Collective kind;
    std::string phase;
    int64_t unit, count;
  };
  const Collective ag = Collective::allgather, rs = Collective::reduce_scatter;
  std::vector<Want> full{{ag, "fwd", 2, 3},  {ag, "fwd", 1, 9}, {ag, "fwd", 0, 12}, {ag, "bwd", 0, 12},
                         {rs, "bwd", 0, 12}, {ag, "bwd", 1, 9}, {rs, "bwd", 1, 9},  {rs, "bwd", 2, 3}};
  for (const char* sharding : {"full_shard", "shard_grad_op"}) {
    for (const char* dtype : {"float32", "int32"}) {
      BOOST_TEST_CONTEXT(sharding << " " << dtype) {
        ExperimentConfig c = parse_config(
            "devices: {count: 3}\nallreduce: {ring: 2}\nexperiment: {buckets: [10, 7, 2], warmup: 1, iters: 2}\n",
            "y.yaml", {std::string("experiment.sharding=") + sharding, std::string("experiment.dtype=") + dtype});
        ExperimentResult r = run_experiment(c);
        std::vector<Want> want = full;
        if (std::string(sharding) == "shard_grad_op")
          std::erase_if(want, [](const Want& w) { return w.kind == Collective::allgather && w.phase == "bwd"; });
        BOOST_TEST_REQUIRE(r.rows.size() == want.size());
        int64_t bytes = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          const ResultRow& row = r.rows[i];
          BOOST_TEST((row.collective == want[i].kind), i);
          BOOST_TEST(row.phase == want[i].phase, i);
          BOOST_TEST(row.bucket == want[i].unit, i);
          BOOST_TEST(row.count == want[i].count, i);
          BOOST_TEST(row.redop == (want[i].kind == Collective::allgather ? "none" : "sum"), i);
          BOOST_TEST(row.busbw == row.algbw * 2.0 / 3.0, boost::test_tools::tolerance(1e-9));
          BOOST_TEST(row.wrong == 0, i);
          bytes += row.bytes;
        }
        BOOST_TEST_REQUIRE(r.step.has_value());
        BOOST_TEST(r.step->buckets == 3);
        BOOST_TEST(r.step->collectives == static_cast<int64_t>(want.size()));
        BOOST_TEST(r.step->bytes == bytes);
        BOOST_TEST(r.step->write_us.has_value());
        setenv("RINGRT_TEST_CORRUPT", "1", 1);
        BOOST_TEST(run_experiment(c).wrong() == static_cast<int64_t>(want.size()));
        unsetenv("RINGRT_TEST_CORRUPT");
      }
    }
  }
}

// FSDP (configs/fsdp-gpt2-small.yaml, three small units on 4 devices): a row per collective of a step with
// its collective, phase and unit; the step line; the same in the CSV; a wrong element is exit status 1.
BOOST_AUTO_TEST_CASE(fsdp_config_reports_every_collective) {
  TempDir dir;
  std::string csv = (dir.path() / "fsdp.csv").string();
  std::vector<std::string> args = small_run("configs/fsdp-gpt2-small.yaml");
  CliResult r = run_cli(args);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  auto rows = table_rows(r.out);
  BOOST_TEST_REQUIRE(rows.size() == 8u);  // 3 forward gathers, 2 backward gathers (not the root), 3 reduce-scatters
  BOOST_TEST((rows[0][9] == "allgather" && rows[0][10] == "fwd" && rows[0][11] == "2"));
  BOOST_TEST((rows[7][9] == "reduce_scatter" && rows[7][10] == "bwd" && rows[7][11] == "2"));
  BOOST_TEST(r.out.find("FSDP full_shard steps (allgather, reduce_scatter sum) float32 over 4 cpu devices") !=
             std::string::npos);
  // bytes per device: (4096 + 1000 + 64) x 4 B gathered in forward and reduce-scattered, (4096 + 1000) x 4 B
  // gathered again
  BOOST_TEST(r.out.find("# step: 3 buckets (8 collectives), 61664 B per device, ") != std::string::npos, r.out);
  args.insert(args.end(), {"--csv", csv});
  BOOST_TEST(run_cli(args).status == 0);
  BOOST_TEST(read_file(csv).find(",4,cpu,allgather,bwd,1,latency,,,,,\n") != std::string::npos, read_file(csv));
  BOOST_TEST(run_cli(args, {"RINGRT_TEST_CORRUPT=1"}).status == 1);
}

BOOST_AUTO_TEST_SUITE_END()
