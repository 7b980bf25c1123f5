#include "tensor/parallel.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "tensor/error.h"
#include "tensor/kernels/blas_info.h"

namespace gradflow {

namespace {

#if defined(__SSE__)
// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
constexpr unsigned kFlushBits = 0x8040;
unsigned float_mode() { return _mm_getcsr() & kFlushBits; }
void set_float_mode(unsigned mode) {
  const unsigned csr = _mm_getcsr();
  if ((csr & kFlushBits) != mode) _mm_setcsr((csr & ~kFlushBits) | mode);
}
#else
unsigned float_mode() { return 0; }
void set_float_mode(unsigned) {}
#endif

// One parallel_for call. Shared by pointer so that a worker which wakes late,
// after the caller has already returned, still holds a live Job: it finds no
// chunk left and goes back to waiting, touching nothing of the caller's.
struct Job {
  detail::ChunkFn fn;
  const void* ctx;
  int64_t n, chunks;
  unsigned float_mode;           // the caller's denormal handling, for every chunk
  std::atomic<int64_t> next{0};  // the next chunk to claim
  std::atomic<int64_t> done{0};  // chunks finished

  // Claims and runs chunks until none is left.
  void work() {
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      fn(ctx, c * n / chunks, (c + 1) * n / chunks);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done.notify_all();
    }
  }
};

// Waiting: spin a little first, since in a training step the next kernel
// usually comes within microseconds, then sleep in the kernel (futex).
template <class T, class Pred>
void wait_until(std::atomic<T>& value, Pred ready) {
  for (int spin = 0; spin < 20000; ++spin) {
    T seen = value.load(std::memory_order_acquire);
    if (ready(seen)) return;
    __builtin_ia32_pause();
  }
  for (T seen = value.load(std::memory_order_acquire); !ready(seen);
       seen = value.load(std::memory_order_acquire))
    value.wait(seen, std::memory_order_acquire);
}

class Pool {
 public:
  ~Pool() { resize(1); }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int threads) {
    stop_workers();
    // A worker starts from the generation of now, not of when its thread
    // first runs: by then a job (or a stop) may already have been posted.
    const uint64_t now = generation_.load(std::memory_order_acquire);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, now] { worker_loop(now); });
  }

  // Runs the job on the workers and this thread; false if another thread's
  // job holds the pool (then the caller runs its job alone).
  bool run(detail::ChunkFn fn, const void* ctx, int64_t n, int64_t chunks) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    in_parallel = true;  // a parallel_for inside one of our chunks runs serially
    struct Reset {
      ~Reset() { in_parallel = false; }
    } reset;
    auto job = std::make_shared<Job>();
    job->fn = fn;
    job->ctx = ctx;
    job->n = n;
    job->chunks = chunks;
    job->float_mode = float_mode();
    {
      std::lock_guard<std::mutex> lock(job_mutex_);
      job_ = job;
    }
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    job->work();
    wait_until(job->done, [&](int64_t d) { return d == chunks; });
    return true;
  }

 private:
  void worker_loop(uint64_t seen) {
    in_parallel = true;
    while (true) {
      wait_until(generation_, [&](uint64_t g) { return g != seen; });
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      std::shared_ptr<Job> job;
      {
        std::lock_guard<std::mutex> lock(job_mutex_);
        job = job_;
      }
      if (!job) continue;
      set_float_mode(job->float_mode);
      job->work();
    }
  }

  void stop_workers() {
    if (workers_.empty()) return;
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_.store(false, std::memory_order_release);
  }

 public:
  // True on the pool's threads, and on a caller while its job runs.
  static thread_local bool in_parallel;

 private:
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex busy_;       // held by the one caller whose job is running
  std::mutex job_mutex_;  // guards job_
  std::shared_ptr<Job> job_;
};

thread_local bool Pool::in_parallel = false;

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void set_num_threads(int threads) {
  if (threads < 1 || threads > 256)
    fail("set_num_threads: expected 1 to 256 threads, got ", threads);
  // A bad GRADFLOW_GEMM fails here, on the caller, not in a worker's GEMM.
  blas_info();
  pool().resize(threads);
}

int num_threads() { return pool().threads(); }

int threads_here() { return Pool::in_parallel ? 1 : num_threads(); }

#if defined(__SSE__)
void set_flush_denormals(bool on) { set_float_mode(on ? kFlushBits : 0); }
bool flush_denormals() { return float_mode() == kFlushBits; }
#else
void set_flush_denormals(bool) {}
bool flush_denormals() { return false; }
#endif

namespace detail {

void run_chunks(int64_t n, int64_t chunks, ChunkFn fn, const void* ctx) {
  // Nested parallel_for (a kernel calling another from inside a chunk) runs
  // serially: the pool's threads are already busy with the outer one.
  if (Pool::in_parallel || !pool().run(fn, ctx, n, chunks)) fn(ctx, 0, n);
}

}  // namespace detail

}  // namespace gradflow
