// The claims table (examples/study/claims.h) held to the parts that judge it
// and to docs/study.md, which explains it: every statement is the page's
// bold line under the row's heading, every id a part judges is a row, no
// part words a claim itself, and every pointer into the page from the code
// names one of its headings. Pointers go stale silently (a heading renamed,
// a file split), so they are read from the sources, not listed here.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "examples/study/claims.h"
#include "tensor/error.h"

namespace gradflow::study {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = GRADFLOW_SOURCE_DIR;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string without_backticks(std::string s) {
  std::erase(s, '`');
  return s;
}

int number_of(const std::string& id) { return std::stoi(id.substr(1)); }

// ---- docs/study.md: its headings and its claims' bold lines ----
struct Page {
  std::vector<std::string> headings;  // "## " to "#### " lines, without the #s
  // The paragraphs that open with a claim's bold line ("**C3. ", "**C3
  // (identity). "), joined into one line, keyed by "C3" or "C3 (identity)",
  // with the heading they sit under.
  std::map<std::string, std::pair<std::string, std::string>> claims;
};

Page read_page() {
  std::istringstream in(read_text(kRoot / "docs/study.md"));
  Page page;
  std::string line, paragraph, heading;
  auto end_paragraph = [&] {
    static const std::regex opening(R"(^\*\*(C[0-9]+(?: \(identity\))?)\. )");
    std::smatch m;
    if (std::regex_search(paragraph, m, opening)) {
      EXPECT_EQ(page.claims.count(m[1]), 0u) << m[1] << " is stated twice";
      page.claims[m[1]] = {paragraph, heading};
    }
    paragraph.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      end_paragraph();
    } else if (line.starts_with("## ") || line.starts_with("### ") || line.starts_with("#### ")) {
      end_paragraph();
      heading = line.substr(line.find(' ') + 1);
      page.headings.push_back(heading);
    } else {
      paragraph += (paragraph.empty() ? "" : " ") + line;
    }
  }
  end_paragraph();
  return page;
}

bool is_heading(const Page& page, const std::string& name) {
  for (const std::string& h : page.headings)
    if (name == h || name == without_backticks(h)) return true;
  return false;
}

// ---- The sources a pointer may sit in ----
struct Source {
  std::string path;  // relative to the source root
  std::string text;  // comment and paragraph line breaks joined (joined())
};

// A pointer may wrap: a comment continues on the next line after its "//"
// or "#", a markdown paragraph on its next line. Such a break becomes one
// space; any other line break stays, so a string literal that merely ends
// beside a path is not read as a pointer.
std::string joined(const std::string& text, bool markdown) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    size_t j = i + 1;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    const bool comment = text.compare(j, 2, "//") == 0 || text.compare(j, 1, "#") == 0;
    if (!markdown && !comment) {
      out += '\n';
      continue;
    }
    while (j < text.size() && (text[j] == '/' || text[j] == '#')) ++j;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    out += ' ';
    i = j - 1;
  }
  return out;
}

std::vector<Source> sources() {
  std::vector<Source> out;
  auto add = [&](const fs::path& p) {
    const std::string ext = p.extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".py" && ext != ".cmake" && ext != ".md" &&
        p.filename() != "CMakeLists.txt")
      return;
    out.push_back({fs::relative(p, kRoot).string(), joined(read_text(p), ext == ".md")});
  };
  for (const char* dir : {"tensor", "autograd", "nn", "examples", "bench", "tests", "docs"})
    for (const auto& e : fs::recursive_directory_iterator(kRoot / dir))
      if (e.is_regular_file()) add(e.path());
  add(kRoot / "README.md");
  return out;
}

// The heading each pointer names: the page's path, then (after an optional
// closing backtick, comma and spaces) a quoted name; in a string literal
// the quotes may be escaped. (Searched by hand: std::regex over every
// source file takes seconds.)
std::vector<std::string> pointers_in(const std::string& text) {
  static const std::string page = "docs/study.md";
  std::vector<std::string> out;
  for (size_t at = text.find(page); at != std::string::npos; at = text.find(page, at + 1)) {
    size_t i = at + page.size();
    if (i < text.size() && text[i] == '`') ++i;
    if (i < text.size() && text[i] == ',') ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i < text.size() && text[i] == '\\') ++i;
    if (i >= text.size() || text[i] != '"') continue;
    const size_t close = text.find('"', i + 1);
    if (close == std::string::npos) continue;
    std::string name = text.substr(i + 1, close - i - 1);
    if (name.ends_with('\\')) name.pop_back();
    if (!name.empty() && name.find('\n') == std::string::npos) out.push_back(name);
  }
  return out;
}

// Every docs/<name>.md a text names.
std::vector<std::string> docs_paths_in(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = text.find("docs/"); at != std::string::npos; at = text.find("docs/", at + 1)) {
    size_t end = at + 5;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                 std::string_view("_./-").find(text[end]) != std::string::npos))
      ++end;
    std::string name = text.substr(at, end - at);
    while (name.ends_with('.')) name.pop_back();  // a sentence's full stop
    if (name.ends_with(".md")) out.push_back(name);
  }
  return out;
}

TEST(StudyClaims, TheTableIsInIdOrderWithTheIdentitiesBesideTheirClaims) {
  const std::vector<Claim>& table = claims();
  std::set<std::string> identities, claimed;
  for (size_t i = 0; i < table.size(); ++i) {
    const Claim& c = table[i];
    SCOPED_TRACE(c.id);
    ASSERT_TRUE(std::regex_match(c.id, std::regex("C[1-9][0-9]*")));
    if (i > 0) {
      const Claim& before = table[i - 1];
      // Ids ascend; an identity comes just before its claim.
      EXPECT_TRUE(number_of(before.id) < number_of(c.id) ||
                  (before.id == c.id && before.identity && !c.identity));
    }
    EXPECT_TRUE((c.identity ? identities : claimed).insert(c.id).second) << "twice";
    EXPECT_FALSE(c.statement.empty());
    EXPECT_FALSE(c.statement.ends_with('.')) << "the page adds the full stop";
    EXPECT_TRUE(c.why.ends_with('.')) << c.why;
    EXPECT_FALSE(c.section.empty());
  }
  EXPECT_EQ(identities, (std::set<std::string>{"C1", "C2", "C3", "C4"}));
  for (int n = 3; n <= 27; ++n) EXPECT_TRUE(claimed.count("C" + std::to_string(n))) << n;
}

TEST(StudyClaims, AVerdictStartsFromItsRow) {
  const Verdict v = verdict_for("C3");
  EXPECT_EQ(v.id, "C3");
  EXPECT_EQ(v.claim, claim("C3").statement);
  EXPECT_EQ(v.why, claim("C3").why);
  EXPECT_FALSE(v.identity);
  EXPECT_TRUE(v.measured.empty() && v.verdict.empty() && v.reason.empty());
  const Verdict identity = verdict_for("C3", true);
  EXPECT_TRUE(identity.identity);
  EXPECT_NE(identity.claim, v.claim);
  EXPECT_THROW(verdict_for("C99"), Error);
  EXPECT_THROW(verdict_for("C5", true), Error);  // C5 is no identity
  EXPECT_THROW(verdict_for("c3"), Error);
}

// Each row is stated on the page as a paragraph opening
// **C3. <statement>.** (an identity: **C3 (identity). <statement>.**), under
// the row's heading, and the page states no claim the table lacks.
TEST(StudyClaims, EveryStatementIsTheBoldLineUnderItsHeading) {
  const Page page = read_page();
  std::set<std::string> headings;
  for (const std::string& h : page.headings)
    EXPECT_TRUE(headings.insert(without_backticks(h)).second) << "two headings '" << h << "'";
  std::set<std::string> keys;
  for (const Claim& c : claims()) {
    const std::string key = c.id + (c.identity ? " (identity)" : "");
    SCOPED_TRACE(key);
    keys.insert(key);
    EXPECT_TRUE(is_heading(page, c.section)) << "no heading '" << c.section << "'";
    const auto found = page.claims.find(key);
    ASSERT_NE(found, page.claims.end()) << "docs/study.md has no **" << key << ". ...** line";
    const auto& [paragraph, heading] = found->second;
    const std::string bold = "**" + key + ". " + c.statement + ".**";
    EXPECT_TRUE(paragraph.starts_with(bold))
        << "the table: " << bold << "\nthe page:  " << paragraph.substr(0, bold.size() + 20);
    EXPECT_EQ(heading, c.section);
  }
  for (const auto& [key, where] : page.claims)
    EXPECT_TRUE(keys.count(key)) << "docs/study.md states " << key << ", the table has no row";
}

// The parts take every claim from the table: each id judged (judge,
// identity_verdict, verdict_for) is a row, every row is judged by some part
// (the mechanism's rows by mechanism_claims, which walks them), and no part
// constructs a Verdict from text of its own.
TEST(StudyClaims, ThePartsJudgeTheTablesClaimsAndWordNone) {
  static const std::regex call(
      R"re((verdict_for|judge|identity_verdict)\(\s*"(C[0-9]+)"(, true)?)re");
  static const std::regex own_words(
      R"re(Verdict\s*\w*\s*\{\s*(\.id\s*=\s*)?"|\.(claim|why)\s*=[^=])re");
  std::set<std::string> judged;
  for (const auto& e : fs::directory_iterator(kRoot / "examples/study")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".cpp" || name.starts_with("claims") || name == "criteria.cpp")
      continue;
    const std::string text = read_text(e.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), call);
         it != std::sregex_iterator(); ++it) {
      // identity_verdict judges an identity; judge and verdict_for say so with ", true".
      const bool identity = (*it)[1] == "identity_verdict" || (*it)[3].matched;
      const std::string key = (*it)[2].str() + (identity ? " (identity)" : "");
      EXPECT_NO_THROW(claim((*it)[2], identity)) << name << " judges " << key;
      judged.insert(key);
    }
    EXPECT_FALSE(std::regex_search(text, own_words))
        << name << " words a claim itself: start from verdict_for (claims.h)";
  }
  for (const Claim& c : claims_of_the_mechanism()) judged.insert(c.id);
  for (const Claim& c : claims())
    EXPECT_TRUE(judged.count(c.id + (c.identity ? " (identity)" : "")))
        << "no part judges " << c.id << (c.identity ? " (identity)" : "");
}

// A claim whose criteria or words changed says when and why in its row,
// and docs/study.md's "History of the criteria" gives the reason under its id.
TEST(StudyClaims, EveryChangeIsInTheHistory) {
  const std::string page = read_text(kRoot / "docs/study.md");
  const size_t start = page.find("## History of the criteria");
  ASSERT_NE(start, std::string::npos);
  const std::string history = page.substr(start, page.find("\n## ", start + 1) - start);
  int changed = 0;
  for (const Claim& c : claims()) {
    if (c.changed.empty()) continue;
    ++changed;
    EXPECT_NE(history.find("**" + c.id + " (" + c.changed.substr(0, 10) + ")"), std::string::npos)
        << c.id << " changed (" << c.changed << ") but the history has no **" << c.id << " ("
        << c.changed.substr(0, 10) << ").** entry";
  }
  EXPECT_GE(changed, 6);
}

TEST(StudyClaims, EveryPointerIntoTheStudyPageNamesAHeading) {
  const Page page = read_page();
  int pointers = 0;
  for (const Source& s : sources())
    for (const std::string& name : pointers_in(s.text)) {
      ++pointers;
      EXPECT_TRUE(is_heading(page, name))
          << s.path << " points to docs/study.md's '" << name << "', not a heading of it";
    }
  EXPECT_GE(pointers, 5) << "the scan found too few pointers to be reading the sources";
}

// A pointer wraps across comment and paragraph lines; a string literal that
// ends beside the path is not one. (The page's path is spliced in, so this
// file holds no pointer of its own for the scan above to read.)
TEST(StudyClaims, APointerIsReadAcrossLineBreaks) {
  const std::string page = "docs/study.md";
  const std::string code = "// see (" + page + ", \"Scale versus\n  // learning rate\").\n";
  EXPECT_EQ(pointers_in(joined(code, false)),
            (std::vector<std::string>{"Scale versus learning rate"}));
  const std::string literal = "\"the slopes " + page + " \"\n      \"derives\"";
  EXPECT_TRUE(pointers_in(joined(literal, false)).empty());
  EXPECT_EQ(pointers_in(joined(page + ", \"The scale and\nthe keys\"", true)),
            (std::vector<std::string>{"The scale and the keys"}));
  EXPECT_EQ(pointers_in("(`" + page + "`, \\\"Running it\\\")"),
            (std::vector<std::string>{"Running it"}));
}

// Every docs/<name>.md the sources name exists, but for the stand-ins that
// usage lines write for any page.
TEST(StudyClaims, EveryNamedDocsPageExists) {
  const std::set<std::string> stand_ins = {"docs/lessons/NN_name.md", "docs/page.md"};
  int named = 0;
  for (const Source& s : sources())
    for (const std::string& name : docs_paths_in(s.text)) {
      if (stand_ins.count(name)) continue;
      ++named;
      EXPECT_TRUE(fs::exists(kRoot / name)) << s.path << " names " << name << ", which is missing";
    }
  EXPECT_GE(named, 10);
}

}  // namespace
}  // namespace gradflow::study
