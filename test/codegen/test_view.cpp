// codegen/view: the index and mask a movement chain reads, evaluated numerically for every output
// element and device, against the interpreter's movement ops (every op, compositions, pads, and
// _device_num-dependent shrink/pad), plus the rendered text of the common forms.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <functional>

#include "codegen/view.hpp"
#include "rewrite/interpreter.hpp"
#include "test/codegen/random_kernel.hpp"

BOOST_AUTO_TEST_SUITE(test_view)

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using namespace ringrt::codegen;

namespace {

struct Views {
  UOpGraph g;
  int ndev;
  DeviceTuple devs;
  std::map<int64_t, std::vector<HostBuffer>> data;

  explicit Views(int n) : ndev(n) {
    for (int d = 0; d < n; ++d) devs.push_back("CPU:" + std::to_string(d));
  }

  // An int32 buffer holding distinct nonzero values (device d, element i: d*10000 + i + 1), as shape s.
  UOp buffer(const Shape& s) {
    UOp b = new_buffer(DeviceSpec(devs), prod(s), DType::int32, &g);
    auto& per_dev = data[std::get<BufferArg>(b.arg()).id];
    for (int d = 0; d < ndev; ++d) {
      per_dev.emplace_back(DType::int32, Shape{prod(s)});
      for (int64_t i = 0; i < prod(s); ++i) per_dev.back().set_int(i, d * 10000 + i + 1);
    }
    return b.reshape(s);
  }

  ViewAccess access(const UOp& view) const {
    int64_t n = prod(view.shape());
    return view_access(view, ViewIndex{unravel(gid_var(n), view.shape()), Mask{}}, dnum_var(ndev - 1));
  }

  // Every element on every device: masked reads give 0, others the element the interpreter moved there.
  void check(const UOp& view, const std::string& label) const {
    std::vector<HostBuffer> want = Interpreter([this](int64_t id) { return &data.at(id); }).evaluate(view);
    ViewAccess a = access(view);
    BOOST_REQUIRE_MESSAGE(a.base.op() == Ops::BUFFER, label << ": the chain does not end at a BUFFER");
    const auto& base = data.at(std::get<BufferArg>(a.base.arg()).id);
    for (int d = 0; d < ndev; ++d) {
      for (int64_t i = 0; i < prod(view.shape()); ++i) {
        VarValues at{{"gid", i}, {"dnum", d}};
        bool valid = a.valid.eval(at);
        int64_t idx = a.index.eval(at), got = 0;
        if (valid) {
          BOOST_REQUIRE_MESSAGE(idx >= 0 && idx < base[static_cast<size_t>(d)].numel(),
                                label << ": index " << idx << " out of range at gid " << i << " dnum " << d);
          got = base[static_cast<size_t>(d)].get_int(idx);
        }
        int64_t w = want[static_cast<size_t>(d)].get_int(i);
        BOOST_REQUIRE_MESSAGE(got == w, label << ", device " << d << ", element " << i << ": view reads " << got
                                              << ", the interpreter " << w << "\nindex " << a.index.render() << " if "
                                              << a.valid.render() << "\n"
                                              << print_graph(view));
      }
    }
  }
};

struct Case {
  std::string name;
  int ndev;
  std::function<UOp(Views&)> build;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      {"reshape", 1,
       [](Views& v) {
         return v.buffer({24}).reshape({2, 3, 4}).reshape({4, 6});
       }},
      {"expand", 1,
       [](Views& v) {
         return v.buffer({2, 1, 4}).expand({2, 3, 4});
       }},
      {"permute", 1,
       [](Views& v) {
         return v.buffer({2, 3, 4}).permute({2, 0, 1});
       }},
      {"flip", 1,
       [](Views& v) {
         return v.buffer({2, 3, 4}).flip({1, 0, 1});
       }},
      {"shrink", 1,
       [](Views& v) {
         return v.buffer({4, 5, 6}).shrink(spans({{1, 3}, {0, 5}, {2, 6}}));
       }},
      {"pad", 1,
       [](Views& v) {
         return v.buffer({2, 3, 4}).pad(spans({{1, 2}, {0, 1}, {2, 0}}));
       }},
      {"scalar", 1, [](Views& v) { return v.buffer({1}).reshape({}); }},
      {"shard_shrink", 4,
       [](Views& v) {
         return v.buffer({8, 5}).shard_local(0);
       }},
      {"unshard_pad", 4,
       [](Views& v) {
         return v.buffer({2, 5}).unshard_local(0);
       }},
      {"shard_axis1", 3,
       [](Views& v) {
         return v.buffer({2, 9}).shard_local(1).permute({1, 0});
       }},
      {"pad_reshape_flip_shrink", 1,
       [](Views& v) {
         return v.buffer({3, 4})
             .pad(spans({{1, 1}, {0, 2}}))
             .reshape({6, 5})
             .flip({1, 1})
             .shrink(spans({{1, 4}, {0, 5}}));
       }},
      {"expand_reshape", 1,
       [](Views& v) {
         return v.buffer({3, 1}).expand({3, 4}).reshape({12}).reshape({2, 6});
       }},
      {"permute_pad_permute", 1,
       [](Views& v) {
         return v.buffer({2, 3}).permute({1, 0}).pad(spans({{1, 0}, {0, 2}})).permute({1, 0});
       }},
      {"shard_then_pad", 2,
       [](Views& v) {
         return v.buffer({4, 3}).shard_local(0).pad(spans({{1, 1}, {2, 0}}));
       }},
      {"unshard_then_reshape", 3,
       [](Views& v) {
         return v.buffer({2, 2}).unshard_local(1).reshape({3, 4}).flip({0, 1});
       }},
      {"pad_of_pad", 1,
       [](Views& v) {
         return v.buffer({2, 2}).pad(spans({{1, 1}, {0, 1}})).pad(spans({{0, 2}, {3, 0}}));
       }},
  };
  return all;
}

}  // namespace

BOOST_DATA_TEST_CASE(movement_ops_match_interpreter, bdata::make(cases()), c) {
  Views v(c.ndev);
  v.check(c.build(v), c.name);
}

// Random chains of up to five movement ops (random_kernel.hpp), on 1..3 devices.
BOOST_DATA_TEST_CASE(random_chains_match_interpreter, bdata::xrange(10), batch) {
  for (int i = 0; i < 40; ++i) {
    uint64_t seed = 5000 + static_cast<uint64_t>(batch * 40 + i);
    Views v(1 + static_cast<int>(seed % 3));
    test::KernelGen chain(seed, v.g);
    Shape s(static_cast<size_t>(chain.pick(0, 3)));
    for (auto& x : s) x = chain.pick(1, 5);
    UOp view = chain.buffer_view(s, DType::int32, chain.pick(1, 5), v.devs, v.data);
    for (auto& [id, per_dev] : v.data)  // distinct values, so a wrong index shows
      for (size_t d = 0; d < per_dev.size(); ++d)
        for (int64_t e = 0; e < per_dev[d].numel(); ++e) per_dev[d].set_int(e, static_cast<int64_t>(d) * 10000 + e + 1);
    v.check(view, "random chain, seed " + std::to_string(seed));
  }
}

BOOST_AUTO_TEST_CASE(contiguous_and_shard_reads_render_plainly) {
  Views one(1);
  ViewAccess plain = one.access(one.buffer({1600}).reshape({4, 400}));
  BOOST_TEST(plain.index.render() == "gid");
  BOOST_TEST(plain.valid.always());
  BOOST_TEST(one.access(one.buffer({6, 4}).permute({1, 0})).index.render() == "(gid / 6) + 4*(gid % 6)");
  BOOST_TEST(one.access(one.buffer({8}).flip({1})).index.render() == "-gid + 7");

  Views four(4);
  ViewAccess shard = four.access(four.buffer({1600}).reshape({4, 400}).shard_local(0));
  BOOST_TEST(shard.index.render() == "gid + 400*dnum");
  BOOST_TEST(shard.valid.always());
  ViewAccess unshard = four.access(four.buffer({400}).reshape({1, 400}).unshard_local(0));
  BOOST_TEST(unshard.index.render() == "gid - 400*dnum");
  BOOST_TEST(unshard.valid.render() == "((gid / 400) >= dnum) && ((gid / 400) < dnum + 1)");
  ViewAccess padded = one.access(one.buffer({400}).pad(spans({{2, 3}})));
  BOOST_TEST(padded.index.render() == "gid - 2");
  BOOST_TEST(padded.valid.render() == "(gid >= 2) && (gid < 402)");
}

BOOST_AUTO_TEST_SUITE_END()
