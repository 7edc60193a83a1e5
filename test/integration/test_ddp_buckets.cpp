// configs/ddp-gpt2-small.yaml holds the gradient buckets of GPT-2 small. This test recomputes them
// from the model's parameter shapes with the rule of scripts/gpt2_buckets.py (reverse parameter order,
// float32, at most 25 MiB per bucket, a larger tensor alone) and checks the parameter count.
// Reference: GPT-2 small (Hugging Face `gpt2`, GPT2LMHeadModel.named_parameters()); PyTorch DDP
// bucket_cap_mb = 25.
#include <boost/test/unit_test.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/cli/config.hpp"

using namespace ringrt;

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
