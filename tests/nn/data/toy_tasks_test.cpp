#include "nn/data/toy_tasks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tensor/creation.h"
#include "tensor/error.h"

namespace gradflow::nn {
namespace {

// Row `b` of a 2-D int64 tensor, read straight from memory.
std::vector<int64_t> row(const Tensor& t, int64_t b) {
  Tensor r = t.select(0, b).contiguous();
  return std::vector<int64_t>(r.data<int64_t>(), r.data<int64_t>() + r.numel());
}

// The message of the Error that fn throws, or "" if it throws none.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ToyTaskConfig config_for(const std::string& task) {
  ToyTaskConfig c;
  c.task = task;
  c.n_symbols = 7;
  c.min_len = 2;
  c.max_len = 6;
  c.max_digits = 4;
  return c;
}

// Checks the layout rules every task shares and returns the content of src and tgt_out.
struct Row {
  std::vector<int64_t> src, tgt;
};
std::vector<Row> check_layout(const ToyTaskConfig& c, const Seq2SeqBatch& batch, int64_t B) {
  const int64_t S = src_len(c), T = tgt_len(c), V = vocab_size(c);
  EXPECT_EQ(batch.src.shape(), (Shape{B, S}));
  EXPECT_EQ(batch.src_pad.shape(), (Shape{B, S}));
  EXPECT_EQ(batch.tgt_in.shape(), (Shape{B, T}));
  EXPECT_EQ(batch.tgt_out.shape(), (Shape{B, T}));
  EXPECT_EQ(batch.src.dtype(), DType::Int64);
  EXPECT_EQ(batch.tgt_in.dtype(), DType::Int64);
  EXPECT_EQ(batch.tgt_out.dtype(), DType::Int64);
  EXPECT_EQ(batch.src_pad.dtype(), DType::Float32);
  std::vector<Row> rows;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> src = row(batch.src, b), in = row(batch.tgt_in, b),
                         out = row(batch.tgt_out, b);
    // src: content, one EOS, then only PAD.
    auto eos = std::find(src.begin(), src.end(), kEosToken);
    EXPECT_NE(eos, src.end()) << "row " << b;
    const int64_t L = eos - src.begin();
    EXPECT_GE(L, 1);
    for (int64_t i = 0; i < S; ++i) {
      if (i < L) {
        EXPECT_GE(src[i], kFirstContentToken);
        EXPECT_LT(src[i], V);
      } else if (i > L) {
        EXPECT_EQ(src[i], kPadToken) << "row " << b << " position " << i;
      }
      EXPECT_EQ(batch.src_pad.at({b, i}), src[i] == kPadToken ? 1.0 : 0.0);
    }
    // tgt_out: content, one EOS, then only PAD.
    auto out_eos = std::find(out.begin(), out.end(), kEosToken);
    EXPECT_NE(out_eos, out.end()) << "row " << b;
    const int64_t M = out_eos - out.begin();
    EXPECT_GE(M, 1);
    for (int64_t i = 0; i < T; ++i) {
      if (i < M) {
        EXPECT_GE(out[i], kFirstContentToken);
        EXPECT_LT(out[i], V);
      } else if (i > M) {
        EXPECT_EQ(out[i], kPadToken);
      }
    }
    // tgt_in: BOS, then tgt_out shifted right by one, EOS dropped.
    EXPECT_EQ(in[0], kBosToken);
    for (int64_t i = 0; i + 1 < T; ++i)
      EXPECT_EQ(in[i + 1], i < M ? out[i] : kPadToken) << "row " << b << " position " << i;
    rows.push_back({{src.begin(), src.begin() + L}, {out.begin(), out.begin() + M}});
  }
  return rows;
}

class EveryTask : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryTask, LayoutShapesAndMasks) {
  ToyTaskConfig c = config_for(GetParam());
  Generator gen(1);
  check_layout(c, make_batch(c, 64, gen), 64);
}

TEST_P(EveryTask, SameSeedSameBatchDifferentSeedDifferent) {
  ToyTaskConfig c = config_for(GetParam());
  Generator g1(42), g2(42), g3(43);
  Seq2SeqBatch a = make_batch(c, 16, g1), b = make_batch(c, 16, g2), d = make_batch(c, 16, g3);
  EXPECT_EQ(a.src.to_vector(), b.src.to_vector());
  EXPECT_EQ(a.tgt_in.to_vector(), b.tgt_in.to_vector());
  EXPECT_EQ(a.tgt_out.to_vector(), b.tgt_out.to_vector());
  EXPECT_EQ(a.src_pad.to_vector(), b.src_pad.to_vector());
  EXPECT_NE(a.src.to_vector(), d.src.to_vector());
  // The generator moves on, so the next batch differs from the first.
  EXPECT_NE(a.src.to_vector(), make_batch(c, 16, g1).src.to_vector());
}

TEST_P(EveryTask, EvalSetIsFixedAndOffTheTrainingStream) {
  ToyTaskConfig c = config_for(GetParam());
  std::vector<Seq2SeqBatch> a = make_eval_set(c, 3, 8, 5), b = make_eval_set(c, 3, 8, 5);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    check_layout(c, a[i], 8);
    EXPECT_EQ(a[i].src.to_vector(), b[i].src.to_vector());
    EXPECT_EQ(a[i].tgt_out.to_vector(), b[i].tgt_out.to_vector());
  }
  EXPECT_NE(a[0].src.to_vector(), a[1].src.to_vector());
  EXPECT_NE(a[0].src.to_vector(), make_eval_set(c, 1, 8, 6)[0].src.to_vector());
  // A training generator with the same seed does not replay the eval set.
  Generator train(5);
  EXPECT_NE(a[0].src.to_vector(), make_batch(c, 8, train).src.to_vector());
  EXPECT_TRUE(make_eval_set(c, 0, 8, 5).empty());
}

INSTANTIATE_TEST_SUITE_P(Tasks, EveryTask,
                         ::testing::Values("copy", "reverse", "sort", "addition"));

// Symbols of content ids, checking each is a symbol.
std::vector<int64_t> symbols(const std::vector<int64_t>& ids, int64_t n_symbols) {
  std::vector<int64_t> s;
  for (int64_t id : ids) {
    EXPECT_TRUE(id >= 3 && id < 3 + n_symbols) << id;
    s.push_back(id - 3);
  }
  return s;
}

// For a symbol task: the expected target of each source, and that lengths cover every value.
void check_symbol_task(const std::string& task,
                       const std::function<std::vector<int64_t>(std::vector<int64_t>)>& expect) {
  ToyTaskConfig c = config_for(task);
  EXPECT_EQ(vocab_size(c), 3 + 7);
  EXPECT_EQ(src_len(c), 7);
  EXPECT_EQ(tgt_len(c), 7);
  Generator gen(7);
  std::set<int64_t> lengths, seen_symbols;
  for (const Row& r : check_layout(c, make_batch(c, 512, gen), 512)) {
    std::vector<int64_t> src = symbols(r.src, 7), tgt = symbols(r.tgt, 7);
    EXPECT_EQ(tgt, expect(src));
    lengths.insert(static_cast<int64_t>(src.size()));
    seen_symbols.insert(src.begin(), src.end());
  }
  EXPECT_EQ(lengths, (std::set<int64_t>{2, 3, 4, 5, 6}));  // all of [min_len, max_len]
  EXPECT_EQ(seen_symbols.size(), 7u);
}

TEST(ToyTasks, CopyTargetIsTheSource) {
  check_symbol_task("copy", [](std::vector<int64_t> s) { return s; });
}

TEST(ToyTasks, ReverseTargetIsTheSourceBackwards) {
  check_symbol_task("reverse", [](std::vector<int64_t> s) {
    std::vector<int64_t> r;
    for (size_t i = s.size(); i > 0; --i) r.push_back(s[i - 1]);
    return r;
  });
}

TEST(ToyTasks, SortTargetIsTheSourceAscending) {
  // Counting sort, independent of the std::sort the task uses.
  check_symbol_task("sort", [](std::vector<int64_t> s) {
    std::vector<int64_t> counts(7, 0), sorted;
    for (int64_t x : s) ++counts[x];
    for (int64_t v = 0; v < 7; ++v) sorted.insert(sorted.end(), counts[v], v);
    return sorted;
  });
}

// Addition: parse "a+b" and the target as decimal text, check a + b in int64.
void check_addition(int64_t max_digits, int64_t B, bool expect_final_carry) {
  ToyTaskConfig c{"addition", 10, 1, 8, max_digits};
  EXPECT_EQ(vocab_size(c), 14);
  EXPECT_EQ(src_len(c), 2 * max_digits + 2);
  EXPECT_EQ(tgt_len(c), max_digits + 2);
  Generator gen(11);
  Seq2SeqBatch batch = make_batch(c, B, gen);
  std::set<size_t> operand_digits, sum_digits;
  for (const Row& r : check_layout(c, batch, B)) {
    std::string src, sum;
    for (int64_t id : r.src) src += id == 13 ? '+' : static_cast<char>('0' + id - 3);
    for (int64_t id : r.tgt) {
      ASSERT_TRUE(id >= 3 && id <= 12) << "target holds a non-digit " << id;
      sum += static_cast<char>('0' + id - 3);
    }
    const size_t plus = src.find('+');
    ASSERT_NE(plus, std::string::npos) << src;
    ASSERT_EQ(src.find('+', plus + 1), std::string::npos) << src;
    const std::string a = src.substr(0, plus), b = src.substr(plus + 1);
    for (const std::string& n : {a, b, sum}) {
      ASSERT_FALSE(n.empty());
      EXPECT_TRUE(n.size() == 1 || n[0] != '0') << "leading zero in " << n;
    }
    EXPECT_LE(a.size(), static_cast<size_t>(max_digits));
    EXPECT_LE(b.size(), static_cast<size_t>(max_digits));
    EXPECT_EQ(std::stoll(sum), std::stoll(a) + std::stoll(b)) << src << "=" << sum;
    operand_digits.insert(a.size());
    operand_digits.insert(b.size());
    sum_digits.insert(sum.size());
  }
  EXPECT_EQ(operand_digits.size(), static_cast<size_t>(max_digits));  // every count 1..max
  if (expect_final_carry) {
    EXPECT_TRUE(sum_digits.count(static_cast<size_t>(max_digits) + 1));
  }
  // The readable form agrees: "a+b=sum".
  const std::string text = example_to_string(c, batch, 0);
  const size_t plus = text.find('+'), eq = text.find('=');
  ASSERT_TRUE(plus != std::string::npos && eq != std::string::npos) << text;
  EXPECT_EQ(std::stoll(text.substr(0, plus)) + std::stoll(text.substr(plus + 1, eq - plus - 1)),
            std::stoll(text.substr(eq + 1)));
}

TEST(ToyTasks, AdditionTargetIsTheSum) { check_addition(3, 512, true); }

// Long carry chains; a sum of max_digits + 1 digits needs two 18-digit operands, too rare here.
TEST(ToyTasks, AdditionCarriesAcrossEighteenDigits) { check_addition(18, 512, false); }

TEST(ToyTasks, ReadableStrings) {
  ToyTaskConfig rev{"reverse", 10, 1, 4, 3};
  // "3 1 4" -> ids 6 4 7.
  Seq2SeqBatch b{from_indices({6, 4, 7, 2, 0}, {1, 5}), from_indices({1, 7, 4, 6, 0}, {1, 5}),
                 from_indices({7, 4, 6, 2, 0}, {1, 5}), zeros({1, 5})};
  EXPECT_EQ(example_to_string(rev, b, 0), "3 1 4 -> 4 1 3");
  std::vector<int64_t> with_specials = {1, 3, 2, 0};
  EXPECT_EQ(tokens_to_string(rev, with_specials), "<bos> 0 <eos> <pad>");
  std::vector<int64_t> too_big = {13};
  EXPECT_NE(error_of([&] { tokens_to_string(rev, too_big); }).find("13"), std::string::npos);

  ToyTaskConfig add{"addition", 10, 1, 8, 3};
  std::vector<int64_t> src = {4, 5, 13, 6, 7, 8}, sum = {6, 8, 10};
  EXPECT_EQ(format_example(add, src, sum), "12+345=357");
  // A model's output row: no BOS, stops at the first EOS.
  EXPECT_EQ(row_content(from_indices({6, 8, 10, 2, 9}, {1, 5}), 0),
            (std::vector<int64_t>{6, 8, 10}));
  EXPECT_THROW(row_content(from_indices({6, 8}, {2}), 0), Error);
  EXPECT_THROW(row_content(from_indices({6, 8}, {1, 2}), 1), Error);
}

TEST(ToyTasks, BadConfigsThrow) {
  auto bad = [](ToyTaskConfig c) {
    return error_of([&] {
      Generator gen(0);
      make_batch(c, 2, gen);
    });
  };
  ToyTaskConfig c = config_for("copy");
  EXPECT_NE(bad({"", 10, 1, 8, 3}).find("unknown task"), std::string::npos);
  EXPECT_NE(bad({"Copy", 10, 1, 8, 3}).find("\"Copy\""), std::string::npos);
  EXPECT_NE(bad({"copy", 0, 1, 8, 3}).find("n_symbols"), std::string::npos);
  EXPECT_NE(bad({"sort", -3, 1, 8, 3}).find("n_symbols"), std::string::npos);
  EXPECT_NE(bad({"copy", 10, 0, 8, 3}).find("min_len"), std::string::npos);
  EXPECT_NE(bad({"reverse", 10, 5, 4, 3}).find("min_len"), std::string::npos);
  EXPECT_NE(bad({"copy", 10, 1, 0, 3}).find("max_len"), std::string::npos);
  EXPECT_NE(bad({"copy", 10, 1, kMaxToyLength + 1, 3}).find("max_len"), std::string::npos);
  EXPECT_NE(bad({"addition", 10, 1, 8, 0}).find("max_digits"), std::string::npos);
  EXPECT_NE(bad({"addition", 10, 1, 8, kMaxToyLength + 1}).find("max_digits"), std::string::npos);
  EXPECT_EQ(bad({"addition", 0, 5, 4, 3}), "");  // fields addition does not use
  EXPECT_THROW(vocab_size({"nope"}), Error);
  Generator gen(0);
  EXPECT_THROW(make_batch(c, 0, gen), Error);
  EXPECT_THROW(make_eval_set(c, -1, 4, 0), Error);
  EXPECT_THROW(make_eval_set(c, 1, 0, 0), Error);
}

}  // namespace
}  // namespace gradflow::nn
