#include "nn/data/char_dataset.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "tensor/creation.h"
#include "tensor/error.h"

namespace gradflow::nn {

namespace {

const char* split_name(Split split) { return split == Split::Train ? "train" : "validation"; }

// A byte for messages: 'a' when printable, else its code, e.g. 0x0a.
std::string byte_str(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("0x") + hex[c >> 4] + hex[c & 15];
}

}  // namespace

CharDataset::CharDataset(std::string_view text, double val_fraction) {
  if (text.empty()) fail("CharDataset: the text is empty");
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    fail("CharDataset: val_fraction = ", val_fraction, " must be in [0, 1)");
  std::array<bool, 256> present{};
  for (char c : text) present[static_cast<unsigned char>(c)] = true;
  id_of_.fill(-1);
  for (int byte = 0; byte < 256; ++byte) {
    if (!present[byte]) continue;
    id_of_[byte] = static_cast<int16_t>(chars_.size());
    chars_ += static_cast<char>(byte);
  }
  ids_.reserve(text.size());
  for (char c : text) ids_.push_back(static_cast<uint8_t>(id_of_[static_cast<unsigned char>(c)]));
  const int64_t n = size();
  const auto n_val = static_cast<int64_t>(std::floor(static_cast<double>(n) * val_fraction));
  n_train_ = n - n_val;
}

CharDataset CharDataset::from_file(const std::string& path, double val_fraction) {
  const char* op = "CharDataset::from_file";
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) fail(op, ": \"", path, "\" is a directory");
  if (std::filesystem::is_character_file(status) || std::filesystem::is_block_file(status))
    fail(op, ": \"", path, "\" is a device, not a text file");
  if (std::filesystem::is_regular_file(status)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxFileBytes)
      fail(op, ": \"", path, "\" has ", size, " bytes, more than the limit of ", kMaxFileBytes);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    const int err = errno;
    fail(op, ": cannot open \"", path, "\": ", err ? std::strerror(err) : "unknown error");
  }
  // Chunked reads with a cap, rather than trusting a size, so pipes and devices work too.
  std::string text;
  std::string chunk(1 << 20, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes)
      fail(op, ": \"", path, "\" is larger than ", kMaxFileBytes, " bytes");
  }
  if (in.bad() || !in.eof()) fail(op, ": cannot read \"", path, "\"");
  if (text.empty()) fail(op, ": \"", path, "\" is empty");
  return CharDataset(text, val_fraction);
}

int64_t CharDataset::split_size(Split split) const {
  return split == Split::Train ? n_train_ : size() - n_train_;
}

std::vector<int64_t> CharDataset::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (id_of_[c] < 0)
      fail("CharDataset::encode: byte ", byte_str(c), " at position ", i,
           " is not in the vocabulary");
    ids.push_back(id_of_[c]);
  }
  return ids;
}

std::string CharDataset::decode(std::span<const int64_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      fail("CharDataset::decode: id ", ids[i], " at position ", i,
           " is outside the vocabulary [0, ", vocab_size(), ")");
    text += chars_[static_cast<size_t>(ids[i])];
  }
  return text;
}

std::pair<Tensor, Tensor> CharDataset::batch(Split split, int64_t B, int64_t T,
                                             Generator& gen) const {
  if (B < 1 || T < 1) fail("CharDataset::batch: B = ", B, " and T = ", T, " must be at least 1");
  const int64_t n = split_size(split);
  if (n < T + 1)
    fail("CharDataset::batch: the ", split_name(split), " split has ", n,
         " tokens but a window of T = ", T, " needs T + 1 = ", T + 1, " (text: ", size(),
         " tokens)");
  const uint8_t* base = ids_.data() + (split == Split::Train ? 0 : n_train_);
  std::vector<int64_t> x(static_cast<size_t>(B * T)), y(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    // Starts 0 .. n - T - 1, every one of the n - T windows equally likely.
    const uint8_t* window = base + gen.below(static_cast<uint64_t>(n - T));
    for (int64_t t = 0; t < T; ++t) {
      x[static_cast<size_t>(b * T + t)] = window[t];
      y[static_cast<size_t>(b * T + t)] = window[t + 1];
    }
  }
  return {from_indices(x, {B, T}), from_indices(y, {B, T})};
}

}  // namespace gradflow::nn
