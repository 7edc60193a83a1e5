// A seeded generator of random kernel ASTs for the codegen fuzz tests (test/codegen, test/hiprtc).
//
// A kernel AST has a random shape of up to 3 axes and a random dtype (float32, float16, bfloat16,
// int32, int8, uint8, bool). Values are built top-down: leaves are BUFFERs on a device tuple seen
// through random movement chains (including _device_num-dependent SHRINK and PAD), CONSTs and
// _device_num; above them ALU ops, CAST, BITCAST, at most one REDUCE_AXIS and movement ops applied to
// computed values. Movement chains are built backwards from the shape wanted, so every chain is valid
// by construction. Input data is random per device, with some special values (0, -0, inf, quiet NaN).
#pragma once

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rewrite/interpreter.hpp"
#include "rewrite/uop.hpp"

namespace ringrt::test {

struct RandomKernel {
  uint64_t seed = 0;
  UOp ast;
  int ndev = 1;
  std::map<int64_t, std::vector<HostBuffer>> data;  // buffer id -> one HostBuffer per device

  BufferLookup lookup() const {
    return [this](int64_t id) -> const std::vector<HostBuffer>* {
      auto it = data.find(id);
      return it == data.end() ? nullptr : &it->second;
    };
  }
};

class KernelGen {
 public:
  KernelGen(uint64_t seed, UOpGraph& g) : rng_(seed), seed_(seed), g_(g) {}

  RandomKernel make() {
    RandomKernel rk;
    rk.seed = seed_;
    ndev_ = pick(1, 3);
    for (int d = 0; d < ndev_; ++d) devices_.push_back("CPU:" + std::to_string(d));
    data_ = &rk.data;
    static const DType kTypes[] = {DType::float32, DType::float16, DType::bfloat16, DType::int32,
                                   DType::int8,    DType::uint8,   DType::bool_};
    rk.ast = value(random_shape(), kTypes[pick(0, 6)], pick(1, 4));
    rk.ndev = ndev_;
    return rk;
  }

  // A random chain of movement ops to `shape` from a fresh BUFFER on `devices`, whose random data goes
  // to `data` (for the view tests).
  UOp buffer_view(const Shape& shape, DType dt, int steps, const DeviceTuple& devices,
                  std::map<int64_t, std::vector<HostBuffer>>& data) {
    devices_ = devices;
    ndev_ = static_cast<int>(devices.size());
    data_ = &data;
    return buffer_view(shape, dt, steps);
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return pick(0, 99) < percent; }

 private:
  UOp buffer_view(const Shape& shape, DType dt, int steps) {
    return movement_to(
        shape, steps, [&](const Shape& s) { return buffer(s, dt); }, true);
  }

  Shape random_shape() {
    Shape s(static_cast<size_t>(pick(0, 3)));
    for (auto& x : s) x = pick(1, 6);
    return s;
  }

  Shape factor(int64_t n) {  // a random shape of rank 1..3 holding n elements
    Shape s;
    int rank = pick(1, 3);
    for (int i = 1; i < rank; ++i) {
      std::vector<int64_t> divs;
      for (int64_t d = 1; d <= n; ++d)
        if (n % d == 0) divs.push_back(d);
      int64_t d = divs[static_cast<size_t>(pick(0, static_cast<int>(divs.size()) - 1))];
      s.push_back(d);
      n /= d;
    }
    s.push_back(n);
    return s;
  }

  UOp buffer(const Shape& s, DType dt) {
    UOp b = new_buffer(DeviceSpec(devices_), prod(s), dt, &g_);
    auto& per_dev = (*data_)[std::get<BufferArg>(b.arg()).id];
    for (int d = 0; d < ndev_; ++d) per_dev.push_back(random_data(dt, prod(s)));
    return b.reshape(s);
  }

  HostBuffer random_data(DType dt, int64_t n) {
    HostBuffer b(dt, {n});
    for (int64_t i = 0; i < n; ++i) {
      if (dt == DType::bool_) {
        b.set_int(i, pick(0, 1));
      } else if (!is_float(dt)) {
        b.set_int(i, chance(20) ? pick(-3, 3) : static_cast<int64_t>(rng_()));  // wraps to the width
      } else if (chance(4)) {
        static const double kSpecial[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 65504.0, 1e-6};
        b.set(i, kSpecial[pick(0, 7)]);
      } else {
        b.set(i, chance(30) ? pick(-8, 8) : std::uniform_real_distribution<double>(-6, 6)(rng_));
      }
    }
    return b;
  }

  UOp constant(const Shape& s, DType dt) {
    double v = dt == DType::bool_ ? pick(0, 1) : is_float(dt) ? pick(-40, 40) / 8.0 : pick(-300, 300);
    return broadcast(const_uop(dt, v, &g_), s);
  }

  UOp broadcast(const UOp& scalar, const Shape& s) {
    if (s.empty()) return scalar;
    return scalar.reshape(Shape(s.size(), 1)).expand(s);
  }

  UOp leaf(const Shape& s, DType dt) {
    int r = pick(0, 99);
    if (r < 65) return buffer_view(s, dt, pick(0, 4));
    if (r < 88) return constant(s, dt);
    return broadcast(device_num(ndev_, &g_).cast(dt), s);
  }

  // A value of shape s and dtype dt.
  UOp value(const Shape& s, DType dt, int depth) {
    if (depth <= 0) return leaf(s, dt);
    int r = pick(0, 99);
    if (r < 20) return leaf(s, dt);
    if (r < 55) return alu(s, dt, depth);
    if (r < 65) return value(s, other_dtype(dt), depth - 1).cast(dt);
    if (r < 70) {
      if (auto same = same_size(dt); same != dt) return value(s, same, depth - 1).bitcast(dt);
    }
    if (r < 85)
      return movement_to(
          s, pick(1, 3), [&](const Shape& t) { return value(t, dt, depth - 1); }, false);
    if (!reduced_) return reduce(s, dt, depth);
    return alu(s, dt, depth);
  }

  UOp alu(const Shape& s, DType dt, int depth) {
    auto sub = [&](DType t) { return value(s, t, depth - 1); };
    if (dt == DType::bool_ && chance(40)) {  // a comparison of some other dtype
      static const Ops kCmp[] = {Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
      DType t = other_dtype(dt);
      return sub(t).alu(kCmp[pick(0, 2)], {sub(t)});
    }
    if (chance(12)) return sub(DType::bool_).where(sub(dt), sub(dt));
    static const Ops kFloatOps[] = {Ops::NEG, Ops::EXP2, Ops::LOG2, Ops::SIN,  Ops::SQRT, Ops::RECIP,
                                    Ops::ADD, Ops::SUB,  Ops::MUL,  Ops::FDIV, Ops::MAX,  Ops::MIN};
    static const Ops kIntOps[] = {Ops::NEG, Ops::ADD, Ops::SUB, Ops::MUL, Ops::IDIV, Ops::MOD,
                                  Ops::MAX, Ops::MIN, Ops::AND, Ops::OR,  Ops::XOR};
    Ops op = is_float(dt) ? kFloatOps[pick(0, 11)] : kIntOps[pick(0, 10)];
    if (group::unary().contains(op)) return sub(dt).alu(op);
    return sub(dt).alu(op, {sub(dt)});
  }

  UOp reduce(const Shape& s, DType dt, int depth) {
    reduced_ = true;
    Shape keep = s;  // s with a few axes of extent 1 inserted, some of which get reduced
    for (int i = pick(0, 2); i > 0; --i) keep.insert(keep.begin() + pick(0, static_cast<int>(keep.size())), 1);
    Shape in = keep;
    std::vector<int> axes;
    for (size_t a = 0; a < keep.size(); ++a)
      if (keep[a] == 1 && chance(70)) {
        axes.push_back(static_cast<int>(a));
        in[a] = pick(1, 6);
      }
    if (axes.empty()) return value(s, dt, depth - 1);
    static const Ops kReduce[] = {Ops::ADD, Ops::MUL, Ops::MAX, Ops::MIN};
    return value(in, dt, depth - 1).r(kReduce[pick(0, 3)], axes).reshape(s);
  }

  DType other_dtype(DType dt) {
    static const DType kTypes[] = {DType::float32, DType::float16, DType::bfloat16, DType::int32,
                                   DType::int8,    DType::uint8,   DType::bool_};
    DType t = kTypes[pick(0, 6)];
    return t == dt ? DType::float32 : t;
  }

  static DType same_size(DType dt) {
    switch (dt) {
      case DType::float32:
        return DType::int32;
      case DType::int32:
        return DType::float32;
      case DType::float16:
        return DType::bfloat16;
      case DType::bfloat16:
        return DType::float16;
      case DType::int8:
        return DType::uint8;
      case DType::uint8:
        return DType::int8;
      default:
        return dt;
    }
  }

  // Movement ops ending at shape `out`, chosen backwards; `source` makes the value at the start.
  // `tuple`: the source lives on the device tuple, so bounds may depend on _device_num (the
  // interpreter evaluates a device-less value once, for device 0).
  UOp movement_to(const Shape& out, int steps, const std::function<UOp(const Shape&)>& source, bool tuple) {
    std::vector<std::function<UOp(const UOp&)>> ops;  // applied in reverse order of choice
    Shape t = out;
    for (int i = 0; i < steps; ++i) {
      size_t rank = t.size();
      int kind = pick(0, tuple ? 5 : 7);  // computed values get more PADs (a masked select)
      if (kind > 5) kind = 3;
      if (rank == 0) kind = 5;
      if (kind == 0) {  // PERMUTE
        std::vector<int64_t> order(rank);
        for (size_t a = 0; a < rank; ++a) order[a] = static_cast<int64_t>(a);
        std::shuffle(order.begin(), order.end(), rng_);
        Shape src(rank);
        for (size_t a = 0; a < rank; ++a) src[static_cast<size_t>(order[a])] = t[a];
        ops.push_back([order](const UOp& x) { return x.permute(order); });
        t = src;
      } else if (kind == 1) {  // FLIP
        std::vector<int64_t> flags(rank);
        for (auto& f : flags) f = pick(0, 1);
        ops.push_back([flags](const UOp& x) { return x.flip(flags); });
      } else if (kind == 2) {  // SHRINK, sometimes one shard per device
        Spans sp;
        Shape src = t;
        for (size_t a = 0; a < rank; ++a) {
          int64_t extra = pick(0, 2);
          Affine begin{pick(0, static_cast<int>(extra)), 0};
          if (tuple && ndev_ > 1 && chance(30)) {
            begin.k = t[a];
            src[a] = t[a] * ndev_ + extra;
          } else {
            src[a] = t[a] + extra;
          }
          sp.push_back({begin, Affine{begin.c + t[a], begin.k}});
        }
        ops.push_back([sp](const UOp& x) { return x.shrink(sp); });
        t = src;
      } else if (kind == 3) {  // PAD, sometimes at a device-dependent offset
        Spans sp;
        Shape src = t;
        for (size_t a = 0; a < rank; ++a) {
          int64_t k = tuple && ndev_ > 1 && chance(30) ? pick(1, 2) : 0;
          int64_t c = pick(0, 1), room = t[a] - c - k * (ndev_ - 1);
          if (room < 2) {
            sp.push_back({Affine{}, Affine{}});
            continue;
          }
          src[a] = pick(1, static_cast<int>(room) - 1);
          sp.push_back({Affine{c, k}, Affine{t[a] - src[a] - c, -k}});
        }
        ops.push_back([sp](const UOp& x) { return x.pad(sp); });
        t = src;
      } else if (kind == 4) {  // EXPAND from extent 1
        Shape src = t;
        for (auto& x : src)
          if (chance(40)) x = 1;
        Shape target = t;
        ops.push_back([target](const UOp& x) { return x.expand(target); });
        t = src;
      } else {  // RESHAPE
        Shape target = t;
        t = factor(prod(t));
        if (chance(20)) t.push_back(1);
        ops.push_back([target](const UOp& x) { return x.reshape(target); });
      }
    }
    UOp x = source(t);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) x = (*it)(x);
    return x;
  }

  std::mt19937_64 rng_;
  uint64_t seed_;
  UOpGraph& g_;
  int ndev_ = 1;
  DeviceTuple devices_;
  std::map<int64_t, std::vector<HostBuffer>>* data_ = nullptr;
  bool reduced_ = false;
};

}  // namespace ringrt::test
