// Values on every device of replicated and sharded tensors however they were made, constants across
// devices, gathers to one device, and schedules without empty work (no 0-byte copy, no 0-element kernel).
//
// Expected values are computed here by host loops over the logical data; each device's value is read
// with Tensor::shards() (what the device holds) and compared with the reference interpreter's
// (Tensor::interpret_shards(), the lowered graph evaluated on the host) and with the host's.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/allreduce_matrix.hpp"

BOOST_AUTO_TEST_SUITE(test_multi_values)

namespace bdata = boost::unit_test::data;

using ringrt::AllreduceSettings;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::ScopedSettings;
using ringrt::Shape;
using ringrt::Tensor;

namespace {

using ringrt::test::forced_settings;
const std::vector<std::string> kAlgos = {"naive", "ring", "all2all"};

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<double> values(const HostBuffer& b) {
  std::vector<double> out;
  for (int64_t i = 0; i < b.numel(); ++i) out.push_back(b.get(i));
  return out;
}

// The elements of the logical row-major tensor (shape) that shard d of n holds along axis.
std::vector<double> shard_of(const std::vector<double>& all, const Shape& shape, int axis, int64_t d, int64_t n) {
  int64_t outer = 1, inner = 1, len = shape[static_cast<size_t>(axis)] / n;
  for (int i = 0; i < axis; ++i) outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = d * len; a < (d + 1) * len; ++a)
      for (int64_t k = 0; k < inner; ++k)
        out.push_back(all[static_cast<size_t>((o * shape[static_cast<size_t>(axis)] + a) * inner + k)]);
  return out;
}

// Each device's value as Tensor::read_local_shards hands it out in chunks of chunk elements, put
// together again; the calls must come in order (every device's chunk at an offset before the next
// offset, devices in the tensor's order) and be chunk elements long but the last.
std::vector<std::vector<double>> read_in_chunks(const Tensor& t, int64_t chunk) {
  std::vector<std::string> devs = t.devices();
  std::vector<std::vector<double>> out(devs.size());
  int64_t last_first = 0;
  size_t last_device = 0;
  t.read_local_shards(chunk, [&](const std::string& dev, int64_t first, const HostBuffer& part) {
    size_t d = static_cast<size_t>(std::find(devs.begin(), devs.end(), dev) - devs.begin());
    BOOST_TEST_REQUIRE(d < devs.size());
    BOOST_TEST(first == static_cast<int64_t>(out[d].size()));  // no gap, no repeat
    BOOST_TEST((first > last_first || (first == last_first && d >= last_device)));
    BOOST_TEST(part.numel() >= 1);
    BOOST_TEST(part.numel() <= chunk);
    last_first = first;
    last_device = d;
    for (double v : values(part)) out[d].push_back(v);
  });
  return out;
}

// Every device's value of t (realized, and as the interpreter computes it) against the host's; the
// realized values read whole (shards, local_host_shards) and in chunks (read_local_shards).
void expect_devices(const Tensor& t, const std::vector<std::vector<double>>& want) {
  std::vector<HostBuffer> oracle = t.interpret_shards();
  std::vector<Tensor> shards = t.shards();
  auto host_shards = t.local_host_shards();
  BOOST_TEST_REQUIRE(shards.size() == want.size());
  BOOST_TEST_REQUIRE(oracle.size() == want.size());
  BOOST_TEST_REQUIRE(host_shards.size() == want.size());
  std::vector<std::vector<std::vector<double>>> chunked;
  for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{1} << 20}) chunked.push_back(read_in_chunks(t, chunk));
  for (size_t d = 0; d < want.size(); ++d) {
    BOOST_TEST_CONTEXT("device " << d) {
      BOOST_TEST(values(shards[d].host()) == want[d], boost::test_tools::per_element());
      BOOST_TEST(values(oracle[d]) == want[d], boost::test_tools::per_element());
      BOOST_TEST(host_shards[d].first == t.devices()[d]);
      BOOST_TEST(values(host_shards[d].second) == want[d], boost::test_tools::per_element());
      for (const auto& c : chunked) BOOST_TEST(c[d] == want[d], boost::test_tools::per_element());
    }
  }
}

// One way of making a logical value of a shape on CPU:0 (or on no device), and its elements.
struct Maker {
  std::string name;
  std::function<Tensor(const Shape&)> make;
  std::function<double(int64_t)> element;  // element i of the row-major value
};

std::vector<Maker> makers() {
  auto ones = [](const Shape& s) { return Shape(s.size(), 1); };
  return {
      {"full", [](const Shape& s) { return Tensor::full(s, 2.5); }, [](int64_t) { return 2.5; }},
      {"constant",
       [=](const Shape& s) {
         return s.empty() ? Tensor::constant(-3) : Tensor::constant(-3).reshape(ones(s)).expand(s);
       },
       [](int64_t) { return -3.0; }},
      {"from_vector",
       [](const Shape& s) {
         std::vector<float> v;
         for (int64_t i = 0; i < numel(s); ++i) v.push_back(static_cast<float>(i * 3 - 7));
         return Tensor::from_vector(v, s);
       },
       [](int64_t i) { return static_cast<double>(i * 3 - 7); }},
      {"arange", [](const Shape& s) { return Tensor::arange(numel(s)).reshape(s); },
       [](int64_t i) { return static_cast<double>(i); }},
      {"cast", [](const Shape& s) { return (Tensor::arange(numel(s)).reshape(s) * 1.5).cast(DType::int32); },
       [](int64_t i) { return std::trunc(static_cast<double>(i) * 1.5); }},
      {"reduction",
       [](const Shape& s) {
         Shape wide = s;
         wide.push_back(2);
         return Tensor::arange(numel(wide), DType::int32).reshape(wide).sum({static_cast<int>(s.size())});
       },
       [](int64_t i) { return static_cast<double>(4 * i + 1); }},
  };
}

// Shapes of rank 0 to 3 whose axis 0 (rank 1, 2) or 1 (rank 3) splits over n devices.
std::vector<std::pair<Shape, std::optional<int>>> shapes(int64_t n) {
  return {{{}, std::nullopt}, {{2 * n}, 0}, {{n, 3}, 0}, {{2, n, 2}, 1}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(replicated_and_sharded_values)

// Class 1: every rank from 0-d up, every way a value is made, replicated and (where an axis splits)
// sharded, 1 to 8 devices: each device holds what the host computes.
BOOST_DATA_TEST_CASE(every_maker_rank_and_layout, bdata::make({1, 2, 3, 5, 8}), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  for (const Maker& m : makers())
    for (const auto& [shape, axis] : shapes(ndev)) {
      std::vector<double> all;
      for (int64_t i = 0; i < numel(shape); ++i) all.push_back(m.element(i));
      BOOST_TEST_CONTEXT(m.name << " of shape rank " << shape.size() << " on " << ndev << " devices") {
        Tensor r = m.make(shape).shard(devs, std::nullopt);
        expect_devices(r, std::vector<std::vector<double>>(static_cast<size_t>(ndev), all));
        BOOST_TEST(r.schedule().kernels() <= 1);
        if (axis) {
          std::vector<std::vector<double>> want;
          for (int64_t d = 0; d < ndev; ++d) want.push_back(shard_of(all, shape, *axis, d, ndev));
          expect_devices(m.make(shape).shard(devs, axis), want);
        }
      }
    }
}

// The issue's example: a replicated 0-d scale times a sharded vector, before and after realizing.
BOOST_DATA_TEST_CASE(replicated_scalar_times_sharded, bdata::make({1, 2, 4, 8}) * bdata::make({false, true}), ndev,
                     realized) {
  auto devs = ringrt::cpu_devices(ndev);
  std::vector<float> v;
  for (int64_t i = 0; i < 2 * ndev; ++i) v.push_back(static_cast<float>(i + 1));
  Tensor x = Tensor::from_vector(v, {2 * ndev}).shard(devs, 0);
  Tensor s = Tensor::full({}, 2.0).shard(devs, std::nullopt);
  if (realized) s.realize();
  Tensor y = x * s;
  BOOST_CHECK_NO_THROW(y.schedule());
  std::vector<double> want;
  for (float f : v) want.push_back(2.0 * f);
  BOOST_TEST(values(y.host()) == want, boost::test_tools::per_element());
  std::vector<std::vector<double>> each(static_cast<size_t>(ndev), std::vector<double>{2.0});
  expect_devices(s, each);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(constants_across_devices)

BOOST_DATA_TEST_CASE(device_less_constant_sharded_and_replicated, bdata::make({1, 2, 4, 8}), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  Tensor sharded = Tensor::constant(2).reshape({1}).expand({2 * ndev}).shard(devs, 0);
  BOOST_CHECK_NO_THROW(sharded.schedule());
  BOOST_TEST(sharded.schedule().copies().empty());
  expect_devices(sharded, std::vector<std::vector<double>>(static_cast<size_t>(ndev), {2.0, 2.0}));
  Tensor replicated = Tensor::constant(2).shard(devs, std::nullopt);
  BOOST_TEST(replicated.schedule().copies().empty());
  BOOST_CHECK_NO_THROW(replicated.realize());
  expect_devices(replicated, std::vector<std::vector<double>>(static_cast<size_t>(ndev), {2.0}));
}

// Class 2: an unrealized constant input moves no data, so the seed's copy counts hold whether or not
// the input was realized: ring and all2all 2n(n-1) over ring edges / any pair, naive n(n-1).
BOOST_DATA_TEST_CASE(constant_input_keeps_the_copy_counts,
                     bdata::make(kAlgos) * bdata::make({3, 4, 5}) * bdata::make({false, true}), algo, ndev, realized) {
  ScopedSettings scoped(forced_settings(algo));
  auto devs = ringrt::cpu_devices(ndev);
  Tensor x = Tensor::full({ndev, 400}, 1).shard(devs, 0);
  if (realized) x.realize();
  Tensor r = x.sum({0});
  ringrt::Schedule s = r.schedule();
  BOOST_TEST(s.algorithms == std::vector<std::string>{algo}, boost::test_tools::per_element());
  int64_t want = algo == "naive" ? ndev * (ndev - 1) : 2 * ndev * (ndev - 1);
  BOOST_TEST(static_cast<int64_t>(s.copies().size()) == want);
  for (const auto& c : s.copies()) {
    BOOST_TEST(c.src != c.dst);
    if (algo == "ring") {
      int64_t a = std::stoll(c.src.substr(4)), b = std::stoll(c.dst.substr(4));
      BOOST_TEST((a + 1) % ndev == b, c.src << " -> " << c.dst << " is not a ring edge");
    }
  }
  expect_devices(r, std::vector<std::vector<double>>(static_cast<size_t>(ndev),
                                                     std::vector<double>(400, static_cast<double>(ndev))));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(gather_to_one_device)

// Class 4: a sharded tensor copied to one device (inside the tuple or outside it) moves each shard
// once, never through an allreduce, whatever RING/ALL2ALL say; values, -0.0 included, arrive intact.
BOOST_DATA_TEST_CASE(one_copy_per_shard, bdata::make(kAlgos) * bdata::make({1, 2, 4, 5, 8}) * bdata::make({0, 1}), algo,
                     ndev, axis) {
  ScopedSettings scoped(forced_settings(algo));
  ringrt::cpu_devices(10);  // CPU:9 lies outside every tuple here
  auto devs = ringrt::cpu_devices(ndev);
  Shape shape = axis == 0 ? Shape{4 * ndev, 3} : Shape{3, 4 * ndev};
  std::vector<float> v;
  for (int64_t i = 0; i < numel(shape); ++i) v.push_back(i % 7 == 3 ? -0.0f : static_cast<float>(i * 5 % 17) - 8.0f);
  Tensor x = Tensor::from_vector(v, shape).shard(devs, axis);
  x.realize();
  for (const std::string& target : {std::string("CPU:0"), devs.back(), std::string("CPU:9")}) {
    BOOST_TEST_CONTEXT("to " << target) {
      Tensor g = x.to(target);
      ringrt::Schedule s = g.schedule();
      BOOST_TEST(s.algorithms.empty());
      std::set<std::string> sources;
      for (const auto& c : s.copies()) {
        BOOST_TEST(c.dst == target);
        BOOST_TEST(c.bytes == numel(shape) / ndev * 4);
        sources.insert(c.src);
      }
      bool inside = std::find(devs.begin(), devs.end(), target) != devs.end();
      BOOST_TEST(s.copies().size() == static_cast<size_t>(inside ? ndev - 1 : ndev));
      BOOST_TEST(sources.size() == s.copies().size());
      BOOST_TEST(s.kernels() <= 1);
      BOOST_TEST(g.devices() == std::vector<std::string>{target}, boost::test_tools::per_element());
      HostBuffer got = g.host();
      BOOST_TEST_REQUIRE(got.numel() == numel(shape));
      for (int64_t i = 0; i < got.numel(); ++i) {
        float f = static_cast<float>(got.get(i));
        BOOST_TEST(std::memcmp(&f, &v[static_cast<size_t>(i)], 4) == 0, "element " << i);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(issue_example_ring_forced) {
  ScopedSettings scoped(forced_settings("ring"));
  auto devs = ringrt::cpu_devices(4);
  Tensor x = Tensor::arange(32, DType::int32).shard(devs, 0);
  x.realize();
  ringrt::Schedule s = x.to("CPU:0").schedule();
  BOOST_TEST(s.copies().size() == 3u);  // CPU:1..3 -> CPU:0; the shard on CPU:0 is read in place
  for (const auto& c : s.copies()) BOOST_TEST(c.bytes == 32);
  BOOST_TEST(s.kernels() == 1);  // the shards side by side
  std::vector<double> want;
  for (int i = 0; i < 32; ++i) want.push_back(i);
  BOOST_TEST(values(x.to("CPU:0").host()) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(no_empty_work)

// No schedule holds a 0-byte copy or a 0-element kernel: allreduces with fewer elements than devices
// (empty chunks) under every algorithm and op, and tensors with no elements at all.
BOOST_DATA_TEST_CASE(allreduce_with_empty_chunks, bdata::make(kAlgos) * bdata::make({2, 3, 5, 8}), algo, ndev) {
  ScopedSettings scoped(forced_settings(algo));
  auto devs = ringrt::cpu_devices(ndev);
  for (int64_t cols : std::vector<int64_t>{1, 2, ndev - 1, ndev + 1}) {
    if (cols < 1) continue;
    BOOST_TEST_CONTEXT(ndev << " x " << cols) {
      std::vector<int32_t> v;
      for (int64_t i = 0; i < ndev * cols; ++i) v.push_back(static_cast<int32_t>(i * 7 % 11) - 5);
      Tensor x = Tensor::from_vector(v, {ndev, cols}).shard(devs, 0);
      x.realize();
      for (bool use_max : {false, true}) {
        Tensor r = use_max ? x.max({0}) : x.sum({0});
        ringrt::Schedule s = r.schedule();
        for (const auto& c : s.copies()) BOOST_TEST(c.bytes > 0);
        for (size_t k = 0; k < s.kernel_items.size(); ++k) BOOST_TEST(s.kernel_items[k].numel > 0);
        std::vector<double> want;
        for (int64_t j = 0; j < cols; ++j) {
          double acc = use_max ? -1e9 : 0;
          for (int64_t d = 0; d < ndev; ++d) {
            double e = v[static_cast<size_t>(d * cols + j)];
            acc = use_max ? std::max(acc, e) : acc + e;
          }
          want.push_back(acc);
        }
        expect_devices(r, std::vector<std::vector<double>>(static_cast<size_t>(ndev), want));
      }
    }
  }
}

BOOST_DATA_TEST_CASE(tensors_without_elements, bdata::make(kAlgos) * bdata::make({1, 2, 4}), algo, ndev) {
  ScopedSettings scoped(forced_settings(algo));
  auto devs = ringrt::cpu_devices(ndev);
  Tensor x = Tensor::full({2 * ndev, 0}, 1).shard(devs, 0);
  for (const Tensor& r : {x.sum({0}), x.sum({1}), x.to("CPU:0"), (x + 1).contiguous(), x.max()}) {
    ringrt::Schedule s = r.schedule();
    for (const auto& c : s.copies()) BOOST_TEST(c.bytes > 0);
    for (const auto& k : s.kernel_items) BOOST_TEST(k.numel > 0);
    BOOST_CHECK_NO_THROW(Tensor(r).realize());
  }
  HostBuffer m = x.max().host();  // max over nothing: the identity
  BOOST_TEST(m.numel() == 1);
  BOOST_TEST(std::isinf(m.get(0)));
  BOOST_TEST(x.sum({0}).host().numel() == 0);
  BOOST_TEST(x.sum({1}).host().numel() == 2 * ndev);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(assign_in_a_loop)

// An assignment whose value reads its own destination runs on every call, even when the graph of a
// later call has the same structure as an earlier one (X.assign(X + 1) built again each step): single
// device, replicated and sharded, every algorithm, against the host's running value.
BOOST_DATA_TEST_CASE(value_reading_its_destination, bdata::make(kAlgos) * bdata::make({1, 3, 7}), algo, ndev) {
  ScopedSettings scoped(forced_settings(algo));
  auto devs = ringrt::cpu_devices(ndev);
  for (int layout = 0; layout < 3; ++layout) {
    BOOST_TEST_CONTEXT((layout == 0 ? "one device" : layout == 1 ? "replicated" : "sharded") << " on " << ndev) {
      Tensor x = Tensor::arange(2 * ndev);
      if (layout == 1) x = x.shard(devs, std::nullopt);
      if (layout == 2) x = x.shard(devs, 0);
      x.realize();
      std::vector<double> want;
      for (int64_t i = 0; i < 2 * ndev; ++i) want.push_back(static_cast<double>(i));
      for (int step = 0; step < 4; ++step) {
        x.assign(step % 2 ? x * 2.0 : x + 1.0);
        if (step != 2) x.realize();  // once left lazy: the next assign settles it first
        for (double& w : want) w = step % 2 ? w * 2 : w + 1;
      }
      BOOST_TEST(values(x.host()) == want, boost::test_tools::per_element());
    }
  }
}

// The same through a shrink: each step writes the running value of two rows into them.
BOOST_DATA_TEST_CASE(into_a_shrink, bdata::make({1, 4}), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  Tensor x = Tensor::arange(8).shard(devs, std::nullopt);
  x.realize();
  for (int step = 0; step < 5; ++step) {
    Tensor rows = x.shrink({{2, 4}});
    rows.assign(rows + 10.0);
  }
  std::vector<double> want = {0, 1, 52, 53, 4, 5, 6, 7};
  BOOST_TEST(values(x.host()) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(small_classes)

// sum of bools counts (int32), on one device and sharded under every algorithm.
BOOST_DATA_TEST_CASE(sum_of_bools_counts, bdata::make(kAlgos) * bdata::make({1, 3, 5}), algo, ndev) {
  ScopedSettings scoped(forced_settings(algo));
  auto devs = ringrt::cpu_devices(ndev);
  std::vector<bool> v;
  for (int64_t i = 0; i < 4 * ndev; ++i) v.push_back(i % 3 != 0);
  int64_t want = 0;
  for (bool b : v) want += b;
  Tensor one = Tensor::from_vector(v, {4 * ndev});
  BOOST_TEST(one.sum().dtype() == DType::int32);
  BOOST_TEST(one.sum().host().get(0) == static_cast<double>(want));
  BOOST_TEST(one.shard(devs, 0).sum().host().get(0) == static_cast<double>(want));
}

BOOST_AUTO_TEST_CASE(cat_across_devices_is_a_device_error) {
  auto devs = ringrt::cpu_devices(3);
  BOOST_CHECK_EXCEPTION(Tensor::cat({Tensor::arange(3).shard(devs, std::nullopt), Tensor::arange(3)}, 0),
                        ringrt::DeviceError, [](const std::exception& e) {
                          std::string w = e.what();
                          return w.find("cat") != std::string::npos && w.find("(3,)") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(assign_into_a_lazy_full_says_what_to_do) {
  Tensor x = Tensor::full({4}, 0);
  BOOST_CHECK_EXCEPTION(x.assign(Tensor::arange(4)), ringrt::ShapeError, [](const std::exception& e) {
    std::string w = e.what();
    return w.find("contiguous()") != std::string::npos && w.find("(4,)") != std::string::npos;
  });
  Tensor y = Tensor::full({4}, 0).contiguous();
  y.realize();
  y.assign(Tensor::arange(4));
  BOOST_TEST(values(y.host()) == (std::vector<double>{0, 1, 2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
