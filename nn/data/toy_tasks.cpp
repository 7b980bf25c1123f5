#include "nn/data/toy_tasks.h"

#include <algorithm>
#include <cassert>

#include "tensor/creation.h"
#include "tensor/error.h"

namespace gradflow::nn {

namespace {

enum class Task { Copy, Reverse, Sort, Addition };

Task parse_task(const std::string& name) {
  if (name == "copy") return Task::Copy;
  if (name == "reverse") return Task::Reverse;
  if (name == "sort") return Task::Sort;
  if (name == "addition") return Task::Addition;
  fail("toy task: unknown task \"", name, "\" (expected copy, reverse, sort or addition)");
}

// One example's content ids, without BOS, EOS or padding.
struct Example {
  std::vector<int64_t> src;
  std::vector<int64_t> tgt;
};

Example draw_symbols(Task task, const ToyTaskConfig& c, Generator& gen) {
  int64_t len = c.min_len + gen.below(static_cast<uint64_t>(c.max_len - c.min_len + 1));
  Example ex;
  ex.src.resize(static_cast<size_t>(len));
  for (int64_t& id : ex.src)
    id = kFirstContentToken + gen.below(static_cast<uint64_t>(c.n_symbols));
  ex.tgt = ex.src;
  if (task == Task::Reverse) std::reverse(ex.tgt.begin(), ex.tgt.end());
  if (task == Task::Sort) std::sort(ex.tgt.begin(), ex.tgt.end());  // ids rise with symbols
  return ex;
}

// Decimal digits of a number with a uniform digit count in [1, max_digits], most significant
// first, with no leading zero (so the count drawn is the count written).
std::vector<int64_t> draw_number(int64_t max_digits, Generator& gen) {
  int64_t n = 1 + gen.below(static_cast<uint64_t>(max_digits));
  std::vector<int64_t> digits(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    digits[static_cast<size_t>(i)] = (i == 0 && n > 1) ? 1 + gen.below(9) : gen.below(10);
  return digits;
}

// Schoolbook addition on digit vectors, so any max_digits works without overflow.
std::vector<int64_t> add_digits(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> sum;  // least significant first while building
  int64_t carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) || carry; ++i) {
    int64_t d = carry;
    if (i < a.size()) d += a[a.size() - 1 - i];
    if (i < b.size()) d += b[b.size() - 1 - i];
    sum.push_back(d % 10);
    carry = d / 10;
  }
  std::reverse(sum.begin(), sum.end());
  return sum;
}

Example draw_addition(const ToyTaskConfig& c, Generator& gen) {
  std::vector<int64_t> a = draw_number(c.max_digits, gen);
  std::vector<int64_t> b = draw_number(c.max_digits, gen);
  Example ex;
  for (int64_t d : a) ex.src.push_back(kFirstContentToken + d);
  ex.src.push_back(kPlusToken);
  for (int64_t d : b) ex.src.push_back(kFirstContentToken + d);
  for (int64_t d : add_digits(a, b)) ex.tgt.push_back(kFirstContentToken + d);
  return ex;
}

void check_range(const char* field, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high)
    fail("toy task: ", field, " = ", value, " is out of range [", low, ", ", high, "]");
}

}  // namespace

void validate_toy_task(const ToyTaskConfig& c) {
  if (parse_task(c.task) == Task::Addition) {
    check_range("max_digits", c.max_digits, 1, kMaxToyLength);
    return;
  }
  check_range("n_symbols", c.n_symbols, 1, INT64_MAX - kFirstContentToken);
  check_range("max_len", c.max_len, 1, kMaxToyLength);
  if (c.min_len < 1 || c.min_len > c.max_len)
    fail("toy task: min_len = ", c.min_len, " must be in [1, max_len = ", c.max_len, "]");
}

int64_t vocab_size(const ToyTaskConfig& c) {
  validate_toy_task(c);
  if (parse_task(c.task) == Task::Addition) return kPlusToken + 1;
  return kFirstContentToken + c.n_symbols;
}

int64_t src_len(const ToyTaskConfig& c) {
  validate_toy_task(c);
  if (parse_task(c.task) == Task::Addition) return 2 * c.max_digits + 2;  // a + b EOS
  return c.max_len + 1;
}

int64_t tgt_len(const ToyTaskConfig& c) {
  validate_toy_task(c);
  if (parse_task(c.task) == Task::Addition) return c.max_digits + 2;  // carry digit, BOS/EOS
  return c.max_len + 1;
}

Seq2SeqBatch make_batch(const ToyTaskConfig& config, int64_t batch, Generator& gen) {
  validate_toy_task(config);
  if (batch < 1) fail("make_batch: batch = ", batch, " must be at least 1");
  Task task = parse_task(config.task);
  const int64_t S = src_len(config), T = tgt_len(config);
  // Start all-PAD (src_pad all 1), then write each example's tokens over its prefix.
  std::vector<int64_t> src(static_cast<size_t>(batch * S), kPadToken);
  std::vector<int64_t> tgt_in(static_cast<size_t>(batch * T), kPadToken);
  std::vector<int64_t> tgt_out(static_cast<size_t>(batch * T), kPadToken);
  std::vector<double> src_pad(static_cast<size_t>(batch * S), 1.0);
  for (int64_t b = 0; b < batch; ++b) {
    Example ex =
        task == Task::Addition ? draw_addition(config, gen) : draw_symbols(task, config, gen);
    const int64_t L = static_cast<int64_t>(ex.src.size()), M = static_cast<int64_t>(ex.tgt.size());
    assert(L + 1 <= S && M + 1 <= T);
    int64_t* s = src.data() + b * S;
    std::copy(ex.src.begin(), ex.src.end(), s);
    s[L] = kEosToken;
    std::fill_n(src_pad.begin() + b * S, L + 1, 0.0);
    int64_t* in = tgt_in.data() + b * T;
    in[0] = kBosToken;
    std::copy(ex.tgt.begin(), ex.tgt.end(), in + 1);
    int64_t* out = tgt_out.data() + b * T;
    std::copy(ex.tgt.begin(), ex.tgt.end(), out);
    out[M] = kEosToken;
  }
  return {from_indices(src, {batch, S}), from_indices(tgt_in, {batch, T}),
          from_indices(tgt_out, {batch, T}), from_vector(src_pad, {batch, S}, DType::Float32)};
}

std::vector<Seq2SeqBatch> make_eval_set(const ToyTaskConfig& config, int64_t n_batches,
                                        int64_t batch, uint64_t seed) {
  validate_toy_task(config);
  if (n_batches < 0) fail("make_eval_set: n_batches = ", n_batches, " is negative");
  if (batch < 1) fail("make_eval_set: batch = ", batch, " must be at least 1");
  // The salt keeps Generator(seed) for training and the eval set on different streams.
  Generator gen(seed ^ 0x5eed'e7a1'0ff5'e75eULL);
  std::vector<Seq2SeqBatch> set;
  set.reserve(static_cast<size_t>(n_batches));
  for (int64_t i = 0; i < n_batches; ++i) set.push_back(make_batch(config, batch, gen));
  return set;
}

std::string tokens_to_string(const ToyTaskConfig& config, std::span<const int64_t> ids) {
  const int64_t V = vocab_size(config);
  const bool addition = parse_task(config.task) == Task::Addition;
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= V)
      fail("tokens_to_string: id ", id, " at position ", i, " is outside the vocabulary [0, ", V,
           ")");
    if (!addition && i > 0) text += ' ';
    if (id == kPadToken) {
      text += "<pad>";
    } else if (id == kBosToken) {
      text += "<bos>";
    } else if (id == kEosToken) {
      text += "<eos>";
    } else if (addition && id == kPlusToken) {
      text += '+';
    } else {
      text += std::to_string(id - kFirstContentToken);
    }
  }
  return text;
}

std::vector<int64_t> row_content(const Tensor& ids, int64_t row) {
  if (ids.ndim() != 2 || ids.dtype() != DType::Int64)
    fail("row_content: expected a (B, L) int64 tensor, got ", dtype_name(ids.dtype()), " ",
         shape_str(ids.shape()));
  if (row < 0 || row >= ids.size(0))
    fail("row_content: row ", row, " out of range for shape ", shape_str(ids.shape()));
  Tensor r = ids.select(0, row).contiguous();
  const int64_t* p = r.data<int64_t>();
  int64_t i = (r.numel() > 0 && p[0] == kBosToken) ? 1 : 0;
  std::vector<int64_t> content;
  for (; i < r.numel() && p[i] != kEosToken && p[i] != kPadToken; ++i) content.push_back(p[i]);
  return content;
}

std::string format_example(const ToyTaskConfig& config, std::span<const int64_t> src,
                           std::span<const int64_t> tgt) {
  const char* arrow = parse_task(config.task) == Task::Addition ? "=" : " -> ";
  return tokens_to_string(config, src) + arrow + tokens_to_string(config, tgt);
}

std::string example_to_string(const ToyTaskConfig& config, const Seq2SeqBatch& batch, int64_t row) {
  return format_example(config, row_content(batch.src, row), row_content(batch.tgt_out, row));
}

}  // namespace gradflow::nn
