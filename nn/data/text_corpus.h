// A built-in, seeded English-like corpus, so a character-level language model has text with real
// structure to learn without downloading anything.
//
// The text comes from a small grammar: sentences of subjects, verbs, objects, adjectives, places,
// times and numbers, e.g.
//   "The small robot counts seven red apples near the river. Does Anna paint an old map?"
// with patterns a model can pick up at increasing depth: spelling, a/an before vowels, plural
// nouns after numbers other than one, verb agreement ("the cat reads", "two cats read"), capitals
// after a full stop, commas and question marks, and small sums written in digits ("Tom has 3
// cups. He finds 4 more, so he has 7 cups."). Paragraphs of 3 to 6 sentences are one line each,
// separated by a blank line.
#pragma once

#include <cstdint>
#include <string>

namespace gradflow::nn {

// Exactly n_chars characters (the last sentence is cut off), only printable ASCII and '\n'.
// The same seed gives the same text on every platform. Throws Error if n_chars < 0.
std::string generate_corpus(int64_t n_chars, uint64_t seed);

}  // namespace gradflow::nn
