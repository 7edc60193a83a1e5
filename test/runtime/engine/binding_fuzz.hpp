// The binding fuzz of test_binding_fuzz.cpp: Fuzz, a pool of tensors (sharded, on one device, replicated) with
// host mirrors of their values, and its random actions (reads, in-place writes, views, overlapping assigns,
// collectives) with the runtime switches toggled between them, each value checked against the mirrors.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/params_internal.hpp"
#include "core/settings.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/api/internal.hpp"

namespace ringrt::test::binding_fuzz {

using Vec = std::vector<double>;
constexpr int64_t R = 4;

// A fuzz run over n-element rows: the pools of tensors and their host mirrors (p/pm, s/sm, q/qm, rps/rpm); run()
// builds them and takes random steps, checking every pool every 7th step.
struct Fuzz {
  int64_t n;
  std::mt19937 rng;
  std::vector<Tensor> p;  // (4, n) sharded on axis 0 over CPU:0..3
  std::vector<Vec> pm;
  std::vector<Tensor> s;  // (n) on CPU:0
  std::vector<Vec> sm;
  std::vector<Tensor> q;  // (n) on CPU:1
  std::vector<Vec> qm;
  std::vector<Tensor> rps;  // [0]: rp, (n) replicated on CPU:0..3, different values per device
  std::vector<Vec> rpm;     // per device
  Tensor& rp() { return rps.at(0); }
  std::vector<std::pair<Tensor, Vec>> kept;  // lazy or borrowed values checked later
  int failures = 0;
  int toggle_every = 2;
  bool quiet = false;
  std::string first_failure;
  std::string log;

  Fuzz(int64_t n_, unsigned seed) : n(n_), rng(seed) {}

  int pick(size_t k) { return static_cast<int>(rng() % k); }
  Vec rand_vec(int64_t len) {
    Vec v(static_cast<size_t>(len));
    for (auto& x : v) x = static_cast<double>(static_cast<int>(rng() % 19) - 9);
    return v;
  }
  Tensor make_p(const Vec& v) {
    std::vector<float> f(v.begin(), v.end());
    Tensor t = Tensor::from_vector(f, {R, n}).shard(cpu_devices(4), 0);
    t.realize();
    return t;
  }
  Tensor make_1(const Vec& v, const std::string& dev) {
    std::vector<float> f(v.begin(), v.end());
    Tensor t = Tensor::from_vector(f, {n}, dev);
    t.realize();
    return t;
  }
  HostBuffer hb(const Vec& v, Shape shape) {
    std::vector<float> f(v.begin(), v.end());
    return HostBuffer::from_vector(f, DType::float32, std::move(shape));
  }

  void check(const Tensor& t, const Vec& want, const std::string& what) {
    std::vector<float> got = t.to_vector<float>();
    bool ok = got.size() == want.size();
    size_t bad = 0;
    for (size_t i = 0; ok && i < got.size(); ++i)
      if (static_cast<double>(got[i]) != want[i]) {
        ok = false;
        bad = i;
      }
    if (!ok && quiet) {
      ++failures;
      first_failure = what + " log:\n" + log;
    } else if (!ok) {
      ++failures;
      BOOST_ERROR("wrong values: " << what << " at " << bad << " got " << (bad < got.size() ? got[bad] : -1.0f)
                                   << " want " << (bad < want.size() ? want[bad] : -1.0) << "\nlog:\n"
                                   << log);
    }
  }

  Vec colsum(const Vec& a) {
    Vec out(static_cast<size_t>(n), 0.0);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(j)] += a[static_cast<size_t>(r * n + j)];
    return out;
  }
  Vec map2(const Vec& a, const Vec& b, const std::function<double(double, double)>& f) {
    Vec o(a.size());
    for (size_t i = 0; i < a.size(); ++i) o[i] = f(a[i], b[i]);
    return o;
  }
  bool big(const Vec& a) {
    for (double x : a)
      if (std::fabs(x) > 1e3) return true;
    return false;
  }

  void check_rp(const std::string& what) {
    std::vector<Tensor> sh = rp().shards();
    for (size_t d = 0; d < 4; ++d) check(sh[d], rpm[d], what + " device " + std::to_string(d));
  }

  void toggle() {
    RuntimeParams r = current_runtime_params();
    r.peer_reads = pick(2) == 1;
    r.inline_small = pick(3) != 0;
    r.kernel_split = pick(4) != 0;
    r.allreduce_in_place = pick(2) == 1;
    r.program_cache = pick(5) == 0 ? 2 : 512;
    r.stream_bytes = pick(2) == 0 ? 1 : RuntimeParams{}.stream_bytes;  // 1: every kernel streams its lines
    set_runtime_params(r, {"runtime.peer_reads", "runtime.inline_small", "runtime.kernel_split",
                           "runtime.allreduce_in_place", "runtime.program_cache", "runtime.stream_bytes"});
    log += "  switches peer=" + std::to_string(r.peer_reads) + " inline=" + std::to_string(r.inline_small) +
           " split=" + std::to_string(r.kernel_split) + " inplace=" + std::to_string(r.allreduce_in_place) +
           " cache=" + std::to_string(r.program_cache) + " stream=" + std::to_string(r.stream_bytes) + "\n";
  }

  // One random action on the pools (act: 0..26), checked against the host mirrors.
  void step();
  // Expressions that only read the sharded pool: elementwise math, sums, shifted rows, collectives.
  void sharded_reads(int act, int a, int b);
  // Writes into the sharded tensor a: assigns, an in-place allreduce, a host write, a view assign, a borrowed view.
  void sharded_writes(int act, int a, int b);
  // Lazy readers of a or b that a later write must not change, and a shifted view of a assigned into a itself.
  void lazy_readers_and_overlaps(int act, int a, int b);
  // The (n) tensors on one device: s (CPU:0) copied into q (CPU:1), q shifted in place, s written after a copy.
  void one_device(int act);
  // The replicated rp (a different (n) vector on each of CPU:0..3): write_shards, allreduce, assign, broadcast.
  void replicated(int act);
  void run(int steps) {
    for (int k = 0; k < 5; ++k) {
      pm.push_back(rand_vec(R * n));
      p.push_back(make_p(pm.back()));
    }
    for (int k = 0; k < 3; ++k) {
      sm.push_back(rand_vec(n));
      s.push_back(make_1(sm.back(), "CPU:0"));
      qm.push_back(rand_vec(n));
      q.push_back(make_1(qm.back(), "CPU:1"));
    }
    {
      std::vector<HostBuffer> sh;
      for (int d = 0; d < 4; ++d) {
        rpm.push_back(rand_vec(n));
        sh.push_back(hb(rpm.back(), {n}));
      }
      rps.push_back(Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 0.0f), {n})
                        .shard(cpu_devices(4), std::nullopt));
      rp().realize();
      rp().write_shards(sh);
    }
    for (int i = 0; i < steps && failures == 0; ++i) {
      if (pick(toggle_every) == 0) toggle();
      step();
      if (i % 7 == 0) {
        for (size_t k = 0; k < p.size(); ++k) check(p[k], pm[k], "pool p" + std::to_string(k));
        for (size_t k = 0; k < s.size(); ++k) check(s[k], sm[k], "pool s" + std::to_string(k));
        for (size_t k = 0; k < q.size(); ++k) check(q[k], qm[k], "pool q" + std::to_string(k));
        for (auto& [t, v] : kept) check(t, v, "kept");
        check_rp("pool rp");
        if (kept.size() > 6) kept.erase(kept.begin(), kept.begin() + 3);
      }
      for (size_t k = 0; k < p.size(); ++k)
        if (big(pm[k])) {
          pm[k] = rand_vec(R * n);
          p[k].write(hb(pm[k], {R, n}));
        }
      bool rbig = false;
      for (auto& v : rpm) rbig = rbig || big(v);
      if (rbig) {
        std::vector<HostBuffer> sh;
        for (auto& v : rpm) {
          v = rand_vec(n);
          sh.push_back(hb(v, {n}));
        }
        rp().write_shards(sh);
      }
      for (size_t k = 0; k < q.size(); ++k)
        if (big(qm[k])) {
          qm[k] = rand_vec(n);
          q[k].write(hb(qm[k], {n}));
        }
    }
  }
};

inline void Fuzz::sharded_reads(int act, int a, int b) {
  Tensor &ta = p[static_cast<size_t>(a)], &tb = p[static_cast<size_t>(b)];
  Vec &A = pm[static_cast<size_t>(a)], &B = pm[static_cast<size_t>(b)];
  switch (act) {
    case 0:
      check(ta * 2.0 + tb, map2(A, B, [](double x, double y) { return 2 * x + y; }), "a*2+b");
      break;
    case 1:
      check((ta + tb).sum({0}), colsum(map2(A, B, [](double x, double y) { return x + y; })), "(a+b).sum(0)");
      break;
    case 2: {
      Vec want(static_cast<size_t>(3 * n));
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t j = 0; j < n; ++j)
          want[static_cast<size_t>(r * n + j)] =
              A[static_cast<size_t>((r + 1) * n + j)] + B[static_cast<size_t>(r * n + j)];
      check(ta.shrink({{1, 4}, {0, n}}) + tb.shrink({{0, 3}, {0, n}}), want, "shifted rows");
      break;
    }
    case 9:
      check(ta * ta + ta, map2(A, A, [](double x, double) { return x * x + x; }), "a*a+a");
      break;
    case 10:
      check(ta.allgather() + 1.0, map2(A, A, [](double x, double) { return x + 1; }), "allgather+1");
      break;
    case 11:
      check((ta + tb).reduce_scatter(ReduceOp::sum, 1), colsum(map2(A, B, [](double x, double y) { return x + y; })),
            "reduce_scatter");
      break;
    case 14: {
      Tensor r1 = ta + tb, r2 = ta + tb, r3 = ta * tb;
      Tensor::realize_all({r1, r2, r3});
      Vec sum = map2(A, B, [](double x, double y) { return x + y; });
      check(r1, sum, "realize_all r1");
      check(r2, sum, "realize_all r2");
      check(r3, map2(A, B, [](double x, double y) { return x * y; }), "realize_all r3");
      break;
    }
    case 22:
      check((ta + tb).reduce_to(pick(4)), colsum(map2(A, B, [](double x, double y) { return x + y; })), "reduce_to");
      break;
    case 23: {  // a replicated copy of a sharded row, allreduced in place, then read
      Tensor r = ta.shrink({{1, 2}, {0, n}}).reshape({n}).to("CPU:3");
      Vec want(A.begin() + n, A.begin() + 2 * n);
      check(r, want, "row 1 to CPU:3");
      break;
    }
  }
}

inline void Fuzz::sharded_writes(int act, int a, int b) {
  Tensor &ta = p[static_cast<size_t>(a)], &tb = p[static_cast<size_t>(b)];
  Vec &A = pm[static_cast<size_t>(a)], &B = pm[static_cast<size_t>(b)];
  const int64_t h = n / 2;
  switch (act) {
    case 3:
      ta.assign(ta + tb).realize();
      A = map2(A, B, [](double x, double y) { return x + y; });
      check(ta, A, "a += b");
      break;
    case 4:
      ta.assign(tb * 3.0 - ta).realize();
      A = map2(A, B, [](double x, double y) { return 3 * y - x; });
      check(ta, A, "a = 3b - a");
      break;
    case 5: {
      ta.allreduce_in_place().realize();
      Vec c = colsum(A);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < n; ++j) A[static_cast<size_t>(r * n + j)] = c[static_cast<size_t>(j)];
      check(ta, A, "allreduce_in_place");
      break;
    }
    case 6:
      A = rand_vec(R * n);
      ta.write(hb(A, {R, n}));
      check(ta, A, "write");
      break;
    case 7: {
      if (a == b) break;
      ta.shrink({{0, R}, {0, h}}).assign(tb.shrink({{0, R}, {n - h, n}})).realize();
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < h; ++j) A[static_cast<size_t>(r * n + j)] = B[static_cast<size_t>(r * n + n - h + j)];
      check(ta, A, "view assign");
      break;
    }
    case 8: {
      Tensor v = ta.shrink({{0, R}, {1, 1 + h}}).contiguous();
      v.realize();
      Vec vm(static_cast<size_t>(R * h)), want(static_cast<size_t>(R * h));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < h; ++j) {
          vm[static_cast<size_t>(r * h + j)] = A[static_cast<size_t>(r * n + 1 + j)];
          want[static_cast<size_t>(r * h + j)] = vm[static_cast<size_t>(r * h + j)] + B[static_cast<size_t>(r * n + j)];
        }
      check(v + tb.shrink({{0, R}, {0, h}}), want, "borrowed view + b");
      kept.emplace_back(v, vm);
      break;
    }
  }
}

inline void Fuzz::lazy_readers_and_overlaps(int act, int a, int b) {
  Tensor &ta = p[static_cast<size_t>(a)], &tb = p[static_cast<size_t>(b)];
  Vec &A = pm[static_cast<size_t>(a)], &B = pm[static_cast<size_t>(b)];
  switch (act) {
    case 15: {  // a lazy reader of a, then a written: the reader keeps the old values
      Tensor r = ta + tb;
      Vec want = map2(A, B, [](double x, double y) { return x + y; });
      ta.assign(ta * 2.0).realize();
      A = map2(A, A, [](double x, double) { return 2 * x; });
      kept.emplace_back(r, want);
      check(ta, A, "a *= 2 after a lazy reader");
      break;
    }
    case 16: {  // allreduce of a sum of buckets, lazily, then the buckets written
      Tensor r = (ta * tb).sum({0});
      Vec want = colsum(map2(A, B, [](double x, double y) { return x * y; }));
      if (pick(2)) {
        A = rand_vec(R * n);
        ta.write(hb(A, {R, n}));
      }
      check(r, want, "(a*b).sum(0) before a write");
      break;
    }
    case 17: {  // write_shards into a, in place allreduce, read by a lazy consumer of b
      Vec c = colsum(A);
      ta.allreduce_in_place();
      Tensor r = ta + tb;
      Vec want(static_cast<size_t>(R * n));
      for (int64_t rr = 0; rr < R; ++rr)
        for (int64_t j = 0; j < n; ++j) {
          size_t k = static_cast<size_t>(rr * n + j);
          A[k] = c[static_cast<size_t>(j)];
        }
      want = map2(A, B, [](double x, double y) { return x + y; });  // b may be a itself
      if (a == b) want = map2(A, A, [](double x, double) { return 2 * x; });
      check(r, want, "allreduce_in_place then + b");
      check(ta, A, "allreduce_in_place lazily");
      break;
    }
    case 24: {  // a shifted view of a written into a itself (overlapping), either direction
      bool left = pick(2);
      int64_t w = n - 1;
      if (left)
        ta.shrink({{0, R}, {0, w}}).assign(ta.shrink({{0, R}, {1, n}})).realize();
      else
        ta.shrink({{0, R}, {1, n}}).assign(ta.shrink({{0, R}, {0, w}})).realize();
      Vec old = A;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < w; ++j) {
          size_t k = static_cast<size_t>(r * n + j);
          if (left)
            A[k] = old[k + 1];
          else
            A[k + 1] = old[k];
        }
      check(ta, A, left ? "a[:, :-1] = a[:, 1:]" : "a[:, 1:] = a[:, :-1]");
      break;
    }
  }
}

inline void Fuzz::one_device(int act) {
  switch (act) {
    case 12: {
      int i = pick(s.size()), j = pick(q.size());
      check(s[static_cast<size_t>(i)].to("CPU:1") * 2.0 + q[static_cast<size_t>(j)],
            map2(sm[static_cast<size_t>(i)], qm[static_cast<size_t>(j)], [](double x, double y) { return 2 * x + y; }),
            "s.to(1)*2+q");
      break;
    }
    case 13: {
      int i = pick(s.size()), j = pick(q.size());
      q[static_cast<size_t>(j)].assign(s[static_cast<size_t>(i)].to("CPU:1") + q[static_cast<size_t>(j)]).realize();
      qm[static_cast<size_t>(j)] =
          map2(sm[static_cast<size_t>(i)], qm[static_cast<size_t>(j)], [](double x, double y) { return x + y; });
      check(q[static_cast<size_t>(j)], qm[static_cast<size_t>(j)], "q += s.to(1)");
      break;
    }
    case 25: {  // the same on one device, the source through another device
      int j = pick(q.size()), i = pick(s.size());
      Tensor& tq = q[static_cast<size_t>(j)];
      Vec& Q = qm[static_cast<size_t>(j)];
      bool left = pick(2), via = pick(2);
      Tensor src = left ? tq.shrink({{1, n}}) : tq.shrink({{0, n - 1}});
      if (via) src = src.to("CPU:2").to("CPU:1");
      (left ? tq.shrink({{0, n - 1}}) : tq.shrink({{1, n}})).assign(src).realize();
      Vec old = Q;
      for (int64_t k = 0; k + 1 < n; ++k) {
        if (left)
          Q[static_cast<size_t>(k)] = old[static_cast<size_t>(k + 1)];
        else
          Q[static_cast<size_t>(k + 1)] = old[static_cast<size_t>(k)];
      }
      check(tq, Q, "q shifted in place");
      (void)i;
      break;
    }
    case 26: {  // q written from s through a copy, while s is then written (the copy's source)
      int j = pick(q.size()), i = pick(s.size());
      Tensor& tq = q[static_cast<size_t>(j)];
      Tensor& ts = s[static_cast<size_t>(i)];
      tq.assign(ts.to("CPU:1") * 2.0);
      ts.assign(ts + 1.0);
      Tensor::realize_all({tq, ts});
      qm[static_cast<size_t>(j)] =
          map2(sm[static_cast<size_t>(i)], sm[static_cast<size_t>(i)], [](double x, double) { return 2 * x; });
      sm[static_cast<size_t>(i)] =
          map2(sm[static_cast<size_t>(i)], sm[static_cast<size_t>(i)], [](double x, double) { return x + 1; });
      check(tq, qm[static_cast<size_t>(j)], "q = 2 s.to(1), s += 1 after");
      check(ts, sm[static_cast<size_t>(i)], "s += 1 after q read it");
      break;
    }
  }
}

inline void Fuzz::replicated(int act) {
  switch (act) {
    case 18: {
      std::vector<HostBuffer> sh;
      for (auto& v : rpm) {
        v = rand_vec(n);
        sh.push_back(hb(v, {n}));
      }
      rp().write_shards(sh);
      rp().allreduce_in_place().realize();
      Vec sum(static_cast<size_t>(n), 0.0);
      for (auto& v : rpm) sum = map2(sum, v, [](double x, double y) { return x + y; });
      for (auto& v : rpm) v = sum;
      check_rp("write_shards + allreduce_in_place (replicated)");
      break;
    }
    case 19: {
      std::vector<Tensor> sh = (rp() * 2.0).shards();
      for (size_t d = 0; d < 4; ++d) check(sh[d], map2(rpm[d], rpm[d], [](double x, double) { return 2 * x; }), "rp*2");
      break;
    }
    case 20:
      rp().assign(rp() * 3.0 - rp().allgather()).realize();
      for (auto& v : rpm) v = map2(v, v, [](double x, double) { return 2 * x; });
      check_rp("rp = 3rp - rp");
      break;
    case 21: {
      int i = pick(s.size());
      std::vector<Tensor> sh = (s[static_cast<size_t>(i)].broadcast(0, cpu_devices(4)) + rp()).shards();
      for (size_t d = 0; d < 4; ++d)
        check(sh[d], map2(rpm[d], sm[static_cast<size_t>(i)], [](double x, double y) { return x + y; }),
              "broadcast + rp");
      break;
    }
  }
}

inline void Fuzz::step() {
  int a = pick(p.size()), b = pick(p.size());
  int act = pick(27);
  log += "act " + std::to_string(act) + " a=" + std::to_string(a) + " b=" + std::to_string(b) + "\n";
  if (log.size() > 4000) log.erase(0, log.size() - 3000);
  switch (act) {
    case 0:
    case 1:
    case 2:
    case 9:
    case 10:
    case 11:
    case 14:
    case 22:
    case 23:
      return sharded_reads(act, a, b);
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 8:
      return sharded_writes(act, a, b);
    case 15:
    case 16:
    case 17:
    case 24:
      return lazy_readers_and_overlaps(act, a, b);
    case 12:
    case 13:
    case 25:
    case 26:
      return one_device(act);
    case 18:
    case 19:
    case 20:
    case 21:
      return replicated(act);
  }
}

}  // namespace ringrt::test::binding_fuzz
