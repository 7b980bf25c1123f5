// Character-level language-model data: a text, its byte vocabulary, and random (x, y) windows.
//
// The vocabulary is the sorted set of bytes that occur in the text, so any file works (UTF-8 or
// not; a multi-byte character is simply several tokens) and ids are stable for a given text:
// id i is the i-th smallest byte present. The text is split once: the first part is training
// data, the last `val_fraction` of it (rounded down to whole bytes) is validation data, so the
// two never share a window.
//
// Dimension letters: B = windows per batch, T = window length (context size).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

enum class Split { Train, Val };

class CharDataset {
 public:
  // The largest file from_file reads, so a wrong path (a huge log) fails quickly.
  static constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

  // Throws Error if `text` is empty or val_fraction is not in [0, 1).
  explicit CharDataset(std::string_view text, double val_fraction = 0.1);

  // Reads the whole file (as bytes). Throws Error with a one-line message naming the path if it
  // cannot be opened or read, is a directory or a device (/dev/zero), is empty or is larger than
  // kMaxFileBytes. A regular file's size is checked before anything is read; a pipe is read up
  // to the limit.
  static CharDataset from_file(const std::string& path, double val_fraction = 0.1);

  int64_t vocab_size() const { return static_cast<int64_t>(chars_.size()); }
  const std::string& chars() const { return chars_; }  // chars()[id] is the byte of id
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }  // whole text, in bytes
  int64_t id_at(int64_t i) const { return ids_.at(static_cast<size_t>(i)); }  // of byte i
  int64_t split_size(Split split) const;

  // Throws Error naming the first byte (or id) that is not in the vocabulary.
  std::vector<int64_t> encode(std::string_view text) const;
  std::string decode(std::span<const int64_t> ids) const;

  // x and y, both (B, T) int64: B windows of T + 1 consecutive tokens of `split`, each starting
  // at an offset drawn uniformly from every possible start; x is the first T tokens and y the
  // last T, so y[b, t] is the token that follows x[b, t]. Throws Error if B < 1, T < 1, or the
  // split has fewer than T + 1 tokens.
  std::pair<Tensor, Tensor> batch(Split split, int64_t B, int64_t T, Generator& gen) const;

 private:
  std::string chars_;               // the vocabulary, sorted
  std::array<int16_t, 256> id_of_;  // byte -> id, or -1 if absent
  std::vector<uint8_t> ids_;        // the whole text as ids (a vocabulary has at most 256)
  int64_t n_train_ = 0;             // ids_[0, n_train_) is training, the rest validation
};

}  // namespace gradflow::nn
