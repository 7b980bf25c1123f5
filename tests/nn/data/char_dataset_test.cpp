#include "nn/data/char_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "nn/data/text_corpus.h"
#include "tensor/error.h"

namespace gradflow::nn {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<int64_t> row(const Tensor& t, int64_t b) {
  Tensor r = t.select(0, b).contiguous();
  return std::vector<int64_t>(r.data<int64_t>(), r.data<int64_t>() + r.numel());
}

TEST(CharDataset, VocabularyIsTheSortedBytesPresent) {
  CharDataset d("hello world");
  EXPECT_EQ(d.chars(), " dehlorw");
  EXPECT_EQ(d.vocab_size(), 8);
  EXPECT_EQ(d.encode("hello"), (std::vector<int64_t>{3, 2, 4, 4, 5}));
}

TEST(CharDataset, EncodeDecodeRoundTripAnyBytes) {
  const std::string text = std::string("a\0b\xff\n\xc3\xa9z", 8);  // NUL, 0xff, UTF-8 'e'
  CharDataset d(text, 0.0);
  EXPECT_EQ(d.vocab_size(), 8);
  EXPECT_EQ(d.decode(d.encode(text)), text);
  EXPECT_EQ(d.decode(d.encode("zba")), "zba");
  EXPECT_TRUE(contains(error_of([&] { d.encode("abq"); }), "'q' at position 2"));
  std::vector<int64_t> bad = {0, 8};
  EXPECT_TRUE(contains(error_of([&] { d.decode(bad); }), "id 8 at position 1"));
  bad = {-1};
  EXPECT_THROW(d.decode(bad), Error);
}

TEST(CharDataset, SplitSizes) {
  const std::string text(100, 'x');
  EXPECT_EQ(CharDataset(text).split_size(Split::Train), 90);
  EXPECT_EQ(CharDataset(text).split_size(Split::Val), 10);
  EXPECT_EQ(CharDataset(text, 0.0).split_size(Split::Val), 0);
  CharDataset d(std::string(10, 'x'), 0.25);  // 2.5 rounds down to 2
  EXPECT_EQ(d.split_size(Split::Train), 8);
  EXPECT_EQ(d.split_size(Split::Val), 2);
  EXPECT_EQ(d.size(), 10);
  EXPECT_THROW(CharDataset(text, 1.0), Error);
  EXPECT_THROW(CharDataset(text, -0.1), Error);
  EXPECT_THROW(CharDataset(text, std::nan("")), Error);
  EXPECT_TRUE(contains(error_of([] { CharDataset(""); }), "empty"));
}

// Every byte distinct, so a window's first token tells where it started.
std::string distinct_bytes(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += static_cast<char>(i);
  return text;
}

TEST(CharDataset, BatchYIsXShiftedFromWithinTheSplit) {
  CharDataset d(distinct_bytes(200), 0.25);  // train: bytes 0..149, val: 150..199
  const int64_t B = 4000, T = 8;             // enough draws to hit both ends of 142 starts
  for (Split split : {Split::Train, Split::Val}) {
    const int64_t first = split == Split::Train ? 0 : 150, n = d.split_size(split);
    Generator gen(3);
    auto [x, y] = d.batch(split, B, T, gen);
    EXPECT_EQ(x.shape(), (Shape{B, T}));
    EXPECT_EQ(y.shape(), (Shape{B, T}));
    EXPECT_EQ(x.dtype(), DType::Int64);
    std::set<int64_t> starts;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<int64_t> xs = row(x, b), ys = row(y, b);
      const int64_t start = xs[0] - first;  // ids equal bytes here: all 200 are present
      ASSERT_GE(start, 0);
      ASSERT_LE(start + T, n - 1) << "window runs past its split";
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(xs[t], first + start + t);
        EXPECT_EQ(ys[t], first + start + t + 1);
      }
      starts.insert(start);
    }
    EXPECT_TRUE(starts.count(0));          // the first window
    EXPECT_TRUE(starts.count(n - T - 1));  // the last window
  }
}

TEST(CharDataset, BatchIsSeeded) {
  CharDataset d(generate_corpus(5000, 1));
  Generator g1(9), g2(9), g3(10);
  auto [x1, y1] = d.batch(Split::Train, 4, 16, g1);
  auto [x2, y2] = d.batch(Split::Train, 4, 16, g2);
  auto [x3, y3] = d.batch(Split::Train, 4, 16, g3);
  EXPECT_EQ(x1.to_vector(), x2.to_vector());
  EXPECT_EQ(y1.to_vector(), y2.to_vector());
  EXPECT_NE(x1.to_vector(), x3.to_vector());
  // Each window is real text: decoding x row + its last y gives a substring of the corpus.
  const std::string text = generate_corpus(5000, 1);
  std::vector<int64_t> ids = row(x1, 0);
  ids.push_back(row(y1, 0).back());
  EXPECT_TRUE(contains(text, d.decode(ids)));
}

TEST(CharDataset, TooShortThrowsNamingSizes) {
  CharDataset d("abcde", 0.0);
  Generator gen(0);
  EXPECT_NO_THROW(d.batch(Split::Train, 2, 4, gen));  // exactly T + 1 tokens
  const std::string msg = error_of([&] { d.batch(Split::Train, 2, 5, gen); });
  EXPECT_TRUE(contains(msg, "train split has 5 tokens")) << msg;
  EXPECT_TRUE(contains(msg, "T + 1 = 6")) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_TRUE(
      contains(error_of([&] { d.batch(Split::Val, 1, 1, gen); }), "validation split has 0"));
  EXPECT_THROW(d.batch(Split::Train, 0, 2, gen), Error);
  EXPECT_THROW(d.batch(Split::Train, 1, 0, gen), Error);
}

class CharDatasetFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradflow_char_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  fs::path dir_;
};

TEST_F(CharDatasetFile, ReadsTheWholeFile) {
  const std::string text = generate_corpus(3000, 4);
  CharDataset d = CharDataset::from_file(write("corpus.txt", text), 0.1);
  EXPECT_EQ(d.size(), 3000);
  EXPECT_EQ(d.split_size(Split::Val), 300);
  EXPECT_EQ(d.decode(d.encode(text)), text);
}

TEST_F(CharDatasetFile, BadFilesThrowNamingThePath) {
  const std::string missing = (dir_ / "no_such_file.txt").string();
  std::string msg = error_of([&] { CharDataset::from_file(missing); });
  EXPECT_TRUE(contains(msg, missing)) << msg;
  EXPECT_TRUE(contains(msg, "No such file")) << msg;
  const std::string empty = write("empty.txt", "");
  msg = error_of([&] { CharDataset::from_file(empty); });
  EXPECT_TRUE(contains(msg, empty) && contains(msg, "empty")) << msg;
  msg = error_of([&] { CharDataset::from_file(dir_.string()); });
  EXPECT_TRUE(contains(msg, "directory")) << msg;
}

// The limit is checked from a regular file's size, before a byte is read;
// a device has no size and no end, and is no text.
TEST_F(CharDatasetFile, TooLargeFilesAndDevicesAreRefusedBeforeReading) {
  const std::string big = write("big.txt", "");
  fs::resize_file(big, CharDataset::kMaxFileBytes + 1);  // sparse: nothing on disk
  std::string msg = error_of([&] { CharDataset::from_file(big); });
  EXPECT_TRUE(contains(msg, "has 1073741825 bytes, more than the limit of 1073741824")) << msg;
  msg = error_of([&] { CharDataset::from_file("/dev/zero"); });
  EXPECT_TRUE(contains(msg, "\"/dev/zero\" is a device, not a text file")) << msg;
}

TEST(TextCorpus, DeterministicExactLengthPrintable) {
  for (int64_t n : {0, 1, 999, 20000}) {
    const std::string text = generate_corpus(n, 7);
    EXPECT_EQ(static_cast<int64_t>(text.size()), n);
    EXPECT_EQ(text, generate_corpus(n, 7));
    for (char c : text) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << int(c);
  }
  EXPECT_NE(generate_corpus(1000, 1), generate_corpus(1000, 2));
  // A prefix is the same text cut earlier.
  EXPECT_EQ(generate_corpus(500, 3), generate_corpus(2000, 3).substr(0, 500));
  EXPECT_THROW(generate_corpus(-1, 0), Error);
}

TEST(TextCorpus, HasStructureToLearn) {
  const std::string text = generate_corpus(50000, 11);
  EXPECT_TRUE(contains(text, ". "));
  EXPECT_TRUE(contains(text, "?"));
  EXPECT_TRUE(contains(text, "\n\n"));
  CharDataset d(text);
  EXPECT_LT(d.vocab_size(), 64);  // a small alphabet
  // "a"/"an" agree with the next word.
  std::vector<std::string> words;
  std::string word;
  for (char c : text + " ") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  auto vowel = [](char c) { return std::string_view("aeiou").find(c) != std::string_view::npos; };
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "a") {
      EXPECT_FALSE(vowel(words[i + 1][0])) << "a " << words[i + 1];
    }
    if (words[i] == "an") {
      EXPECT_TRUE(vowel(words[i + 1][0])) << "an " << words[i + 1];
    }
  }
  // Every sentence within a paragraph starts with a capital.
  for (size_t i = 0; i + 2 < text.size(); ++i) {
    if ((text[i] == '.' || text[i] == '?') && text[i + 1] == ' ') {
      EXPECT_TRUE(std::isupper(static_cast<unsigned char>(text[i + 2]))) << text.substr(i, 20);
    }
  }
  // The sums are right: "has 3 cups. She finds 4 more, so she has 7 cups."
  int checked = 0;
  for (size_t at = text.find("has "); at != std::string::npos; at = text.find("has ", at + 1)) {
    int a = 0, b = 0, sum = 0;
    if (std::sscanf(text.c_str() + at, "has %d %*s %*s finds %d more, so %*s has %d ", &a, &b,
                    &sum) != 3)
      continue;
    EXPECT_EQ(a + b, sum) << text.substr(at, 60);
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace gradflow::nn
