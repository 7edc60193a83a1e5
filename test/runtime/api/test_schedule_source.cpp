// Schedule::kernel_items, Schedule::source and Schedule::emit_sources (runtime/api/schedule.cpp):
// one file per kernel item named by item index and kernel name, the IR realize() compiles
// (codegen/item_kernel.hpp), the host compiler builds every emitted cpu file, bad targets are ConfigErrors and
// unwritable directories IOErrors.
#include <fmt/format.h>
#include <stdlib.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "codegen/compiler.hpp"
#include "codegen/item_kernel.hpp"
#include "codegen/render.hpp"
#include "rewrite/canonical.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/temp_dir.hpp"

BOOST_AUTO_TEST_SUITE(test_schedule_source)

namespace fs = std::filesystem;
using namespace ringrt;

namespace {

using ringrt::test::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// (4, 400) ones sharded over 4 cpu devices, realized; all2all forced for the scope of the caller.
Tensor sharded_ones(int ndev, int64_t cols) {
  Tensor x = Tensor::full({ndev, cols}, 1.0).contiguous().shard(cpu_devices(ndev), 0);
  x.realize();
  return x;
}

AllreduceSettings all2all() {
  AllreduceSettings s;
  s.all2all = 2;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(kernel_items_are_the_plans_kernels_lowered) {
  ScopedSettings scope(all2all());
  Tensor r = (sharded_ones(4, 400).sum({0}) * 2.0).contiguous();
  Schedule s = r.schedule();
  BOOST_TEST_REQUIRE(s.kernel_items.size() == static_cast<size_t>(s.kernels()));
  // the plan realize() runs: its numbers are the program's parameters (rewrite/canonical.hpp)
  ItemPlan plan = plan_schedule(lower_multi({with_scalar_parameters(uop_of(r))}, all2all()).roots);
  size_t next = 0;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    if (plan.items[i].kind != ScheduleItem::Kind::kernel) continue;
    BOOST_TEST_REQUIRE(next < s.kernel_items.size());
    const KernelItem& ki = s.kernel_items[next++];
    BOOST_TEST(ki.item == i);
    BOOST_TEST(ki.device == plan.items[i].device.to_string());
    BOOST_TEST(kernel_of(s, next - 1).dump() == lower_item(plan.items[i]).kernel.dump());
    BOOST_TEST(ki.name == lower_item(plan.items[i]).kernel.name);
    // the listing's line for this item says KERNEL
    BOOST_TEST(s.to_string().find(fmt::format("{:3} KERNEL {}", i, ki.device)) != std::string::npos, s.to_string());
  }
  BOOST_TEST(next == s.kernel_items.size());
}

BOOST_AUTO_TEST_CASE(emit_sources_writes_one_compilable_file_per_kernel_item) {
  ScopedSettings scope(all2all());
  Schedule s = (sharded_ones(4, 400).sum({0}) * 2.0).contiguous().schedule();
  TempDir tmp;
  fs::path dir = tmp.path() / "a" / "b";  // parents are created
  std::vector<std::string> cpu = s.emit_sources(dir.string(), "cpu");
  std::vector<std::string> hip = s.emit_sources(dir.string(), "hip");
  std::vector<std::string> nvidia = s.emit_sources(dir.string(), "nvidia");  // the same source, for NVRTC
  BOOST_TEST_REQUIRE(cpu.size() == s.kernel_items.size());
  BOOST_TEST_REQUIRE(hip.size() == s.kernel_items.size());
  BOOST_TEST_REQUIRE(nvidia.size() == s.kernel_items.size());
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  BOOST_TEST(files == 3 * s.kernel_items.size());
  const std::regex name(R"((\d{3})_([Er]_[0-9a-f]{16})\.(cpp|hip))");
  codegen::HostCompiler cc;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const KernelItem& ki = s.kernel_items[i];
    std::smatch m;
    std::string base = fs::path(cpu[i]).filename().string();
    BOOST_TEST_REQUIRE(std::regex_match(base, m, name), base);
    BOOST_TEST(std::stoul(m[1].str()) == ki.item);
    BOOST_TEST(m[2].str() == ki.name);
    BOOST_TEST(m[3].str() == "cpp");
    BOOST_TEST(fs::path(hip[i]).filename().string() == fmt::format("{:03}_{}.hip", ki.item, ki.name));
    BOOST_TEST(fs::path(nvidia[i]).filename().string() == fmt::format("{:03}_{}.cu", ki.item, ki.name));
    BOOST_TEST(slurp(nvidia[i]) == slurp(hip[i]));
    BOOST_TEST(slurp(cpu[i]) == codegen::render_cpp(kernel_of(s, i)));
    BOOST_TEST(slurp(hip[i]) == codegen::render_hip(kernel_of(s, i)));
    BOOST_TEST(slurp(hip[i]).find("extern \"C\" __global__ void " + ki.name + "(") != std::string::npos);
    // the host compiler builds it and the kernel's entry point is there
    BOOST_TEST(cc.load(slurp(cpu[i]), ki.name)->function(ki.name) != nullptr);
  }
}

BOOST_AUTO_TEST_CASE(bad_target_and_unwritable_directory_are_config_errors) {
  ScopedSettings scope(all2all());
  Schedule s = sharded_ones(2, 8).sum({0}).schedule();
  BOOST_TEST_REQUIRE(!s.kernel_items.empty());
  TempDir tmp;
  BOOST_CHECK_THROW(s.emit_sources((tmp.path() / "x").string(), "cuda"), ConfigError);
  BOOST_TEST(!fs::exists(tmp.path() / "x"));  // nothing written for a bad target
  BOOST_CHECK_THROW(s.source(0, "CPU"), ConfigError);
  BOOST_CHECK_THROW(s.source(s.kernel_items.size(), "cpu"), std::out_of_range);
  std::ofstream(tmp.path() / "file") << "not a directory";
  try {
    s.emit_sources((tmp.path() / "file" / "sub").string(), "cpu");
    BOOST_ERROR("no IOError for a directory under a regular file");
  } catch (const IOError& e) {
    BOOST_TEST(std::string(e.what()).find("file/sub") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(s.emit_sources((tmp.path() / "file").string(), "hip"), IOError);
}

BOOST_AUTO_TEST_CASE(a_realized_tensor_emits_nothing) {
  Tensor r = sharded_ones(2, 8).sum({0});
  r.realize();
  Schedule s = r.schedule();
  BOOST_TEST(s.kernels() == 0);
  BOOST_TEST(s.kernel_items.empty());
  TempDir tmp;
  BOOST_TEST(s.emit_sources((tmp.path() / "empty").string(), "cpu").empty());
  BOOST_TEST(fs::is_directory(tmp.path() / "empty"));
}

BOOST_AUTO_TEST_CASE(a_placeholder_plans_like_a_realized_input_and_never_runs) {
  ScopedSettings scope(all2all());
  Tensor p = Tensor::placeholder({4, 400}, DType::float32, cpu_devices(4), 0);
  Schedule planned = p.sum({0}).schedule(), real = sharded_ones(4, 400).sum({0}).schedule();
  BOOST_TEST(planned.to_string() == real.to_string());
  BOOST_TEST((planned.copies() == real.copies()));
  BOOST_TEST_REQUIRE(planned.kernel_items.size() == real.kernel_items.size());
  for (size_t i = 0; i < planned.kernel_items.size(); ++i)
    BOOST_TEST(planned.kernel_items[i].name == real.kernel_items[i].name);
  BOOST_TEST(p.shape() == (Shape{4, 400}), boost::test_tools::per_element());
  BOOST_CHECK_THROW(p.realize(), DeviceError);
  BOOST_CHECK_THROW(p.host(), DeviceError);
  BOOST_CHECK_THROW((p.sum({0}) * 2.0).realize(), DeviceError);
  BOOST_CHECK_THROW(p.write_shards(std::vector<HostBuffer>(4, HostBuffer(DType::float32, {1, 400}))), DeviceError);
  Tensor x = sharded_ones(4, 400);
  BOOST_CHECK_THROW(x.assign(p), DeviceError);
  BOOST_TEST(x.sum({0}).to_vector<float>()[0] == 4.0f);  // the refused assign left x as it was
  BOOST_CHECK_THROW(Tensor::placeholder({3, 8}, DType::float32, cpu_devices(2), 0), ShapeError);
}

// The ring's plan from its definition (rewrite/rules/allreduce.cpp): n chunks, each reduced over n-1
// steps around the ring (one copy and one combining kernel per chunk and step), then forwarded n-1
// steps (one copy each, stored straight into scratch), and one kernel reassembling the chunks:
// 2n(n-1) copies, each over a ring edge, and n(n-1) + 1 kernels.
BOOST_AUTO_TEST_CASE(a_64_device_ring_plans_its_defined_items) {
  const int64_t n = 64, count = 32 * n;  // 32 elements per chunk: every chunk is the same length
  AllreduceSettings s;
  s.ring = 2;
  std::vector<std::string> devs = cpu_devices(static_cast<int>(n));
  Tensor y = Tensor::placeholder({n, count}, DType::float32, devs, 0).sum({0});
  Lowered low = lower_multi({uop_of(y)}, s);
  BOOST_TEST(low.algorithms == std::vector<Algorithm>{Algorithm::ring}, boost::test_tools::per_element());
  ItemPlan plan = plan_schedule(low.roots);
  BOOST_TEST(plan.copies() == static_cast<size_t>(2 * n * (n - 1)));
  BOOST_TEST(plan.kernels() == static_cast<size_t>(n * (n - 1) + 1));
  auto index = [&](const std::string& d) { return std::find(devs.begin(), devs.end(), d) - devs.begin(); };
  size_t off_ring = 0, other_length = 0;
  for (const ScheduleItem& it : plan.items) {
    if (it.kind != ScheduleItem::Kind::copy) continue;
    off_ring += (index(it.ast.src(0).device().name()) + 1) % n != index(it.device.name());
    other_length += prod(it.ast.shape()) != count / n;
  }
  BOOST_TEST(off_ring == 0u);
  BOOST_TEST(other_length == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
