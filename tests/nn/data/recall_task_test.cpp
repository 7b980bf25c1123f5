// The associative-recall task: the layout of its sequences, that every
// scored answer is the value written after its query's key, and its checks.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "nn/data/recall_task.h"

namespace gradflow::nn {
namespace {

TEST(RecallTask, AnswersAreTheValuesOfTheQueriedKeys) {
  RecallTaskConfig c{.n_keys = 32, .n_values = 16, .pairs = 6, .queries = 3};
  EXPECT_EQ(recall_vocab_size(c), 3 + 32 + 16);
  EXPECT_EQ(recall_seq_len(c), 2 * 6 + 2 * 3);
  Generator gen(7);
  RecallBatch b = make_recall_batch(c, 50, gen);
  ASSERT_EQ(b.input.shape(), (Shape{50, 18}));
  ASSERT_EQ(b.target.shape(), (Shape{50, 18}));
  for (int64_t i = 0; i < 50; ++i) {
    std::map<int64_t, int64_t> value_of;
    for (int64_t p = 0; p < 12; p += 2) {
      const int64_t key = b.input.at({i, p}), value = b.input.at({i, p + 1});
      EXPECT_TRUE(key >= 3 && key < 35) << key;
      EXPECT_TRUE(value >= 35 && value < 51) << value;
      EXPECT_TRUE(value_of.emplace(key, value).second) << "keys repeat in example " << i;
    }
    EXPECT_EQ(b.input.at({i, 12}), 1);  // SEP
    std::set<int64_t> asked;
    int64_t scored = 0;
    for (int64_t p = 0; p < 18; ++p) {
      const int64_t want = b.target.at({i, p});
      if (want == 0) continue;
      ++scored;
      // Scored at a query: the next input token is the answer, the value of that key.
      ASSERT_EQ((p - 13) % 2, 0) << p;
      const int64_t query = b.input.at({i, p});
      ASSERT_TRUE(value_of.count(query)) << "query " << query << " is not a key of the example";
      EXPECT_EQ(want, value_of[query]);
      if (p + 1 < 18) {
        EXPECT_EQ(b.input.at({i, p + 1}), want);
      }
      EXPECT_TRUE(asked.insert(query).second) << "a key asked twice";
    }
    EXPECT_EQ(scored, 3);
  }
}

// Fused pairs: "k v" is one token 3 + 32 + 16 + 16 k + v; the query is
// the key's own id and the answer its value's, as without fusing.
TEST(RecallTask, FusedPairsHoldKeyAndValueInOneToken) {
  RecallTaskConfig c{.n_keys = 32, .n_values = 16, .pairs = 6, .queries = 3, .fused_pairs = true};
  EXPECT_EQ(recall_vocab_size(c), 3 + 32 + 16 + 32 * 16);
  EXPECT_EQ(recall_seq_len(c), 6 + 2 * 3);
  Generator gen(8);
  RecallBatch b = make_recall_batch(c, 40, gen);
  ASSERT_EQ(b.input.shape(), (Shape{40, 12}));
  for (int64_t i = 0; i < 40; ++i) {
    std::map<int64_t, int64_t> value_of;  // key id -> value id
    for (int64_t p = 0; p < 6; ++p) {
      const int64_t pair = b.input.at({i, p}) - 51;
      ASSERT_TRUE(pair >= 0 && pair < 32 * 16) << b.input.at({i, p});
      EXPECT_TRUE(value_of.emplace(3 + pair / 16, 35 + pair % 16).second) << "keys repeat";
    }
    EXPECT_EQ(b.input.at({i, 6}), 1);  // SEP
    int64_t scored = 0;
    for (int64_t p = 0; p < 12; ++p) {
      const int64_t want = b.target.at({i, p});
      if (want == 0) continue;
      ++scored;
      ASSERT_EQ((p - 7) % 2, 0) << p;  // at the queries, positions 7, 9, 11
      const int64_t query = b.input.at({i, p});
      ASSERT_TRUE(value_of.count(query)) << query;
      EXPECT_EQ(want, value_of[query]);
    }
    EXPECT_EQ(scored, 3);
  }
}

TEST(RecallTask, SameSeedSameBatch) {
  RecallTaskConfig c;
  Generator a(3), b(3);
  RecallBatch x = make_recall_batch(c, 4, a), y = make_recall_batch(c, 4, b);
  EXPECT_EQ(x.input.to_vector(), y.input.to_vector());
  EXPECT_EQ(x.target.to_vector(), y.target.to_vector());
}

TEST(RecallTask, BadConfigsAreOneLineErrors) {
  Generator gen(0);
  auto expect_error = [&](RecallTaskConfig c, const std::string& needle) {
    try {
      make_recall_batch(c, 2, gen);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({.n_keys = 4, .n_values = 4, .pairs = 5, .queries = 1}, "pairs = 5 exceeds n_keys");
  expect_error({.n_keys = 8, .n_values = 4, .pairs = 2, .queries = 3}, "queries = 3 exceeds pairs");
  expect_error({.n_keys = 0, .n_values = 4, .pairs = 1, .queries = 1}, "n_keys = 0");
  expect_error({.n_keys = 5000, .n_values = 4, .pairs = 1, .queries = 1}, "at most 4096");
  EXPECT_THROW(make_recall_batch(RecallTaskConfig{}, 0, gen), Error);
}

}  // namespace
}  // namespace gradflow::nn
