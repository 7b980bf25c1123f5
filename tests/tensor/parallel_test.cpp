// The thread pool: every item runs exactly once, nested and concurrent calls
// are safe, and kernels built on it give the same bits at any thread count.
#include "tensor/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/error.h"
#include "tensor/matmul.h"
#include "tensor/random.h"
#include "tensor/reduce.h"
#include "tests/tensor/testing.h"
#include "tests/tensor/threads_for.h"

namespace gradflow {
namespace {
using testing::elements;
using testing::expect_tensor;
using testing::ThreadsFor;

TEST(Parallel, EveryItemRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadsFor pool(threads);
    EXPECT_EQ(num_threads(), threads);
    for (int64_t n : {1, 2, 7, 100, 10007}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> calls{0};
      parallel_for(n, 1, [&](int64_t begin, int64_t end) {
        EXPECT_LT(begin, end);
        ++calls;
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << i;
      EXPECT_EQ(calls, std::min<int64_t>(n, threads));
    }
  }
}

TEST(Parallel, SmallWorkStaysOnTheCallingThread) {
  ThreadsFor pool(2);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(100, 64, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(parallel_chunks(100, 64), 1);
  EXPECT_EQ(parallel_chunks(128, 64), 2);
}

TEST(Parallel, NestedCallsRunSerially) {
  ThreadsFor pool(2);
  std::atomic<int64_t> sum{0};
  parallel_for(4, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      parallel_for(1000, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  });
  EXPECT_EQ(sum, 4000);
}

// What a kernel asks before it cuts its work for the pool (packed_gemm.cpp).
TEST(Parallel, ThreadsHereIsOneInsideAChunk) {
  ThreadsFor pool(2);
  EXPECT_EQ(threads_here(), 2);
  std::atomic<int> inside_most{0};
  parallel_for(
      4, 1, [&](int64_t, int64_t) { inside_most = std::max(inside_most.load(), threads_here()); });
  EXPECT_EQ(inside_most, 1);
  EXPECT_EQ(threads_here(), 2);
}

TEST(Parallel, CallersOnSeveralThreadsAllFinish) {
  ThreadsFor pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep)
        parallel_for(64, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total, 4 * 200 * 64);
}

TEST(Parallel, RejectsABadThreadCount) {
  EXPECT_THROW(set_num_threads(0), Error);
  EXPECT_THROW(set_num_threads(257), Error);
  EXPECT_EQ(num_threads(), 1);
}

// The elementwise, reduction and softmax kernels split big tensors over the
// pool, runs cut anywhere: the same bits as on one thread, for contiguous,
// transposed, strided and broadcast operands alike.
TEST(Parallel, KernelsAreBitwiseTheSameAtAnyThreadCount) {
  Generator gen(5);
  const Tensor big = randn({3, 190, 257}, gen);             // 146,490 elements
  const Tensor t = randn({257, 190}, gen).transpose(0, 1);  // (190, 257), transposed
  const Tensor row = randn({257}, gen);
  const Tensor strided = randn({3, 380, 257}, gen).slice(1, 0, 380, 2);
  auto all = [&] {
    std::vector<Tensor> out = {
        add(big, t),                  // broadcast over the leading axis
        mul(strided, row),            // strided and a broadcast row
        gelu(t),                      // unary on a transposed view
        where(gt(big, 0.0), big, t),  // ternary
        sum(big, {1}),                // reduce a middle axis
        sum(big, {0, 2}, true),       // reduce outer and inner
        sum_to(big, {190, 1}),        // sum_to with fewer axes
        softmax(big, -1),             // rows back to back
        softmax(big, 1),              // rows across the tensor
        log_softmax(t, -1),           // non-contiguous rows
        t.contiguous(),               // copy_ from a transposed view
    };
    Tensor acc = big.clone();
    add_(acc, strided);
    out.push_back(acc);
    // Two outputs, a contiguous grad with a transposed x.
    const GeluBackward both = gelu_backward_with_value(big.select(0, 1), t);
    out.push_back(both.grad_x);
    out.push_back(both.value);
    out.push_back(Tensor::empty({3, 190, 257}).fill_(0.25));
    return out;
  };
  const std::vector<Tensor> one = all();
  for (int threads : {2, 3}) {
    ThreadsFor pool(threads);
    const std::vector<Tensor> many = all();
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_EQ(many[i].to_vector(), one[i].to_vector()) << "kernel " << i << ", " << threads;
  }
}

// One big product is cut into blocks of rows, a batch by whole matrices:
// every thread count gives the product, and a fixed count the same bits.
TEST(Parallel, MatmulAgreesAtEveryThreadCount) {
  Generator gen(3);
  const std::vector<std::pair<Tensor, Tensor>> cases = {
      {randn({300, 70}, gen), randn({70, 90}, gen)},   // tall
      {randn({200, 64}, gen), randn({64, 500}, gen)},  // wide
      {randn({70, 300}, gen).transpose(0, 1), randn({90, 70}, gen).transpose(0, 1)},
      {randn({6, 5, 33, 17}, gen), randn({6, 5, 17, 29}, gen)},  // a batch
      {randn({3, 130, 40}, gen), randn({40, 70}, gen)},          // folded stack
      {randn({2, 200, 64}, gen, DType::Float64), randn({2, 64, 80}, gen, DType::Float64)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [a, b] = cases[i];
    const Tensor expected = matmul_reference(a, b);
    const std::vector<double> want = elements(expected);
    for (int threads : {1, 2, 3}) {
      ThreadsFor pool(threads);
      SCOPED_TRACE("case " + std::to_string(i) + ", " + std::to_string(threads) + " threads");
      Tensor first = matmul(a, b);
      expect_tensor(first, expected.shape(), want, 1e-4);
      EXPECT_EQ(matmul(a, b).to_vector(), first.to_vector());
    }
  }
}

// 1e-30 * 1e-10 = 1e-40 is a denormal float: kept as IEEE 754 says by
// default, 0 with flushing on, on the calling thread and on the pool's
// threads alike (the mode travels with the job, whatever mode the worker
// thread had).
TEST(Parallel, FlushDenormalsReachesThePoolsThreads) {
  ThreadsFor pool(2);
  const int64_t n = 1 << 18;  // cut over both threads
  const Tensor a = full({n}, 1e-30), b = full({n}, 1e-10);
  ASSERT_FALSE(flush_denormals());
  const std::vector<double> kept = elements(mul(a, b));
  EXPECT_EQ(kept.front(), static_cast<double>(1e-30f * 1e-10f));
  EXPECT_NE(kept.back(), 0.0);
  set_flush_denormals(true);
  if (!flush_denormals()) GTEST_SKIP() << "this CPU has no denormal mode";
  EXPECT_EQ(elements(mul(a, b)), std::vector<double>(n, 0.0));
  set_flush_denormals(false);
  EXPECT_EQ(elements(mul(a, b)), kept);
}

}  // namespace
}  // namespace gradflow
