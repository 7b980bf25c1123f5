#include "nn/data/text_corpus.h"

#include <array>
#include <cctype>
#include <string_view>

#include "tensor/error.h"
#include "tensor/random.h"

namespace gradflow::nn {

namespace {

struct Noun {
  std::string_view one, many;
};
struct Verb {
  std::string_view s, base, past;  // "counts", "count", "counted"
};

constexpr std::array<Noun, 14> kAgents = {{{"robot", "robots"},
                                           {"teacher", "teachers"},
                                           {"farmer", "farmers"},
                                           {"cat", "cats"},
                                           {"dog", "dogs"},
                                           {"bird", "birds"},
                                           {"child", "children"},
                                           {"sailor", "sailors"},
                                           {"baker", "bakers"},
                                           {"owl", "owls"},
                                           {"fox", "foxes"},
                                           {"engineer", "engineers"},
                                           {"artist", "artists"},
                                           {"mouse", "mice"}}};
constexpr std::array<Noun, 15> kThings = {{{"apple", "apples"},
                                           {"map", "maps"},
                                           {"box", "boxes"},
                                           {"letter", "letters"},
                                           {"lamp", "lamps"},
                                           {"book", "books"},
                                           {"stone", "stones"},
                                           {"ship", "ships"},
                                           {"key", "keys"},
                                           {"cup", "cups"},
                                           {"bell", "bells"},
                                           {"egg", "eggs"},
                                           {"umbrella", "umbrellas"},
                                           {"orange", "oranges"},
                                           {"leaf", "leaves"}}};
constexpr std::array<Verb, 14> kVerbs = {{{"counts", "count", "counted"},
                                          {"reads", "read", "read"},
                                          {"carries", "carry", "carried"},
                                          {"finds", "find", "found"},
                                          {"paints", "paint", "painted"},
                                          {"opens", "open", "opened"},
                                          {"watches", "watch", "watched"},
                                          {"holds", "hold", "held"},
                                          {"sells", "sell", "sold"},
                                          {"draws", "draw", "drew"},
                                          {"builds", "build", "built"},
                                          {"hides", "hide", "hid"},
                                          {"washes", "wash", "washed"},
                                          {"fixes", "fix", "fixed"}}};
constexpr std::array<std::string_view, 18> kAdjectives = {
    "small",  "quiet", "old",  "red",   "green", "tall",    "happy", "tired",  "clever",
    "bright", "heavy", "tiny", "brave", "empty", "strange", "blue",  "wooden", "ancient"};
constexpr std::array<std::string_view, 8> kPlaces = {
    "in the garden", "near the river", "under the bridge", "at the market",
    "on the hill",   "by the sea",     "behind the house", "inside the old tower"};
constexpr std::array<std::string_view, 5> kTimes = {"yesterday", "last night", "this morning",
                                                    "at noon", "after the storm"};
struct Name {
  std::string_view name, pronoun;
};
constexpr std::array<Name, 8> kNames = {{{"Anna", "she"},
                                         {"Tom", "he"},
                                         {"Mira", "she"},
                                         {"Leo", "he"},
                                         {"Sam", "he"},
                                         {"Nora", "she"},
                                         {"Ivan", "he"},
                                         {"Ada", "she"}}};
constexpr std::array<std::string_view, 12> kNumbers = {"two", "three",  "four",   "five",
                                                       "six", "seven",  "eight",  "nine",
                                                       "ten", "eleven", "twelve", "many"};

// Builds one text from seeded choices; every draw goes through gen so a seed fixes the text.
class Writer {
 public:
  explicit Writer(uint64_t seed) : gen_(seed) {}

  void paragraph(std::string& out) {
    const int64_t n = 3 + gen_.below(4);
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) out += ' ';
      std::string s = sentence();
      s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
      out += s;
    }
    out += "\n\n";
  }

 private:
  template <class A>
  const typename A::value_type& pick(const A& items) {
    return items[static_cast<size_t>(gen_.below(items.size()))];
  }
  bool chance(int64_t percent) { return gen_.below(100) < percent; }

  // "a" or "an" with an optional adjective, then the noun: "an old map", "a cat".
  std::string with_article(std::string_view noun) {
    std::string words = adjective() + std::string(noun);
    return (std::string_view("aeiou").find(words[0]) != std::string_view::npos ? "an " : "a ") +
           words;
  }

  std::string adjective() { return chance(50) ? std::string(pick(kAdjectives)) + " " : ""; }

  // A noun phrase of `noun`: "the old map", "an owl", "the foxes", "seven red apples". Sets
  // `plural` for verb agreement.
  std::string phrase(const Noun& noun, bool& plural) {
    switch (gen_.below(4)) {
      case 0:
        plural = false;
        return "the " + adjective() + std::string(noun.one);
      case 1:
        plural = false;
        return with_article(noun.one);
      case 2:
        plural = true;
        return "the " + adjective() + std::string(noun.many);
      default:
        plural = true;
        std::string number(pick(kNumbers));
        return number + " " + adjective() + std::string(noun.many);
    }
  }
  std::string subject(bool& plural) {
    if (chance(25)) {
      plural = false;
      return std::string(pick(kNames).name);
    }
    return phrase(pick(kAgents), plural);
  }
  std::string object() {
    bool plural;
    return phrase(pick(kThings), plural);
  }
  std::string verb(bool plural) {
    const Verb& v = pick(kVerbs);
    return std::string(plural ? v.base : v.s);
  }

  // Each draw is its own statement: the operands of + are evaluated in an unspecified order,
  // and the text must not depend on the compiler.
  std::string sentence() {
    bool plural = false;
    switch (gen_.below(6)) {
      case 0: {  // The small robot counts seven red apples near the river.
        std::string s = subject(plural);
        s += " " + verb(plural);
        s += " " + object();
        if (chance(50)) s += " " + std::string(pick(kPlaces));
        return s + ".";
      }
      case 1: {  // Yesterday, the farmers found a key.
        std::string s(pick(kTimes));
        s += ", " + subject(plural);
        s += " " + std::string(pick(kVerbs).past);
        return s + " " + object() + ".";
      }
      case 2: {  // Tom opens the box and reads a letter.
        std::string s = subject(plural);
        s += " " + verb(plural);
        s += " " + object();
        s += " and " + verb(plural);
        return s + " " + object() + ".";
      }
      case 3: {  // Does Anna paint an old map?
        std::string s = subject(plural);
        s = (plural ? "do " : "does ") + s;
        s += " " + std::string(pick(kVerbs).base);
        return s + " " + object() + "?";
      }
      case 4: {  // There are five cups on the hill. / There is an egg by the sea.
        const Noun& noun = pick(kThings);
        std::string s =
            chance(50) ? "there is " + with_article(noun.one)
                       : "there are " + std::string(pick(kNumbers)) + " " + std::string(noun.many);
        return s + " " + std::string(pick(kPlaces)) + ".";
      }
      default: {  // Tom has 3 cups. He finds 4 more, so he has 7 cups.
        const int64_t a = 2 + gen_.below(9);
        const int64_t b = 2 + gen_.below(9);
        const Noun& noun = pick(kThings);
        const Name& who = pick(kNames);
        std::string name(who.name), he(who.pronoun), many(noun.many);
        he[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(he[0])));
        return name + " has " + std::to_string(a) + " " + many + ". " + he + " finds " +
               std::to_string(b) + " more, so " + std::string(who.pronoun) + " has " +
               std::to_string(a + b) + " " + many + ".";
      }
    }
  }

  Generator gen_;
};

}  // namespace

std::string generate_corpus(int64_t n_chars, uint64_t seed) {
  if (n_chars < 0) fail("generate_corpus: n_chars = ", n_chars, " is negative");
  Writer writer(seed);
  std::string out;
  out.reserve(static_cast<size_t>(n_chars) + 1024);
  while (static_cast<int64_t>(out.size()) < n_chars) writer.paragraph(out);
  out.resize(static_cast<size_t>(n_chars));
  return out;
}

}  // namespace gradflow::nn
