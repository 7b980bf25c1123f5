// attention_maps.h: the layers by their parameters' names, one figure per layer with a panel
// per head, the tokens on the axes, entropies checked against uniform attention worked out by
// hand; and --attention-maps in each training program, run as a user would.
#include "examples/toolkit/training/attention_maps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "nn/data/toy_tasks.h"
#include "nn/linear.h"
#include "nn/models.h"
#include "tensor/creation.h"
#include "tensor/error.h"
#include "tests/examples/run_program.h"

namespace gradflow::training {
namespace {

namespace fs = std::filesystem;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nn::ModelConfig tiny_config() {
  nn::ModelConfig c;
  c.vocab = 8, c.d_model = 16, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = 6;
  return c;
}

std::vector<std::string> names(const std::vector<AttentionLayer>& layers) {
  std::vector<std::string> out;
  for (const AttentionLayer& a : layers) out.push_back(a.name);
  return out;
}

TEST(AttentionLayers, NamedAsTheirParametersInEveryModel) {
  Generator gen(1);
  nn::EncoderDecoder seq2seq(tiny_config(), gen);
  const std::vector<AttentionLayer> layers = attention_layers(seq2seq);
  EXPECT_EQ(names(layers), (std::vector<std::string>{
                               "encoder.layers.0.self_attn", "encoder.layers.1.self_attn",
                               "decoder.layers.0.self_attn", "decoder.layers.0.cross_attn",
                               "decoder.layers.1.self_attn", "decoder.layers.1.cross_attn"}));
  EXPECT_EQ(layers[3].layer, seq2seq.decoder->layers[0]->cross_attn.get());
  EXPECT_TRUE(layers[3].decoder && layers[3].cross);
  EXPECT_EQ(layers[4].index, 1);
  nn::DecoderLM lm(tiny_config(), gen);
  EXPECT_EQ(names(attention_layers(lm)),
            (std::vector<std::string>{"decoder.layers.0.self_attn", "decoder.layers.1.self_attn"}));
  nn::EncoderClassifier classifier(2, tiny_config(), gen);
  EXPECT_EQ(names(attention_layers(classifier)),
            (std::vector<std::string>{"encoder.layers.0.self_attn", "encoder.layers.1.self_attn"}));
  nn::Linear linear(4, 4, {}, gen);
  EXPECT_THROW(attention_layers(linear), Error);
}

// With q = 0 every score is 0, so each query spreads its weight evenly over the keys it sees:
// its entropy is ln(keys seen), the uniform one's. Source "3 1 <eos>" and one PAD; target
// input "<bos> 3 1" (no padding: T = 3).
class UniformMaps : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto& [name, t] : model.state_dict())
      if (name.find(".q_proj.") != std::string::npos) t.fill_(0);
    model.train();
  }
  AttentionExample example(std::vector<std::string> source) {
    return {.title = "test <reverse>",
            .encoder_tokens = std::move(source),
            .decoder_tokens = {"<bos>", "3", "1"},
            .forward = [this] {
              model.forward(from_indices({6, 4, 2, 0}, {1, 4}), from_indices({1, 6, 4}, {1, 3}),
                            from_vector(std::vector<double>{0, 0, 0, 1}, {1, 4}));
            }};
  }
  Generator gen{3};
  nn::EncoderDecoder model{tiny_config(), gen};
};

TEST_F(UniformMaps, OneFigurePerLayerWithEveryHeadTheTokensAndTheEntropies) {
  const std::vector<AttentionMapFile> files = attention_maps(model, example({"3", "1", "<eos>"}));
  ASSERT_EQ(files.size(), 6u);
  EXPECT_EQ(files[0].name, "encoder.layers.0.self_attn.svg");
  EXPECT_EQ(files[3].name, "decoder.layers.0.cross_attn.svg");
  for (const AttentionMapFile& f : files) {
    SCOPED_TRACE(f.name);
    EXPECT_EQ(count(f.svg, ">head 0<"), 1u);
    EXPECT_EQ(count(f.svg, ">head 1<"), 1u);
    EXPECT_EQ(count(f.svg, ">head 2<"), 0u);
    EXPECT_EQ(count(f.svg, "class=\"cell\""), 2u * 3 * 3);  // padding left out: 3 x 3 per head
    EXPECT_EQ(count(f.svg, "class=\"row-label\""), 2u * 3);
    EXPECT_NE(f.svg.find(">test &lt;reverse&gt;: "), std::string::npos);  // escaped
    EXPECT_NE(f.svg.find(">attention weight<"), std::string::npos);       // the colour bar
  }
  // Encoder: 3 source keys for each source query (the PAD is hidden): ln 3 = 1.0986.
  EXPECT_NE(files[0].svg.find(">rows: source queries, columns: source keys<"), std::string::npos);
  EXPECT_NE(files[0].svg.find(">&lt;eos&gt;<"), std::string::npos);
  EXPECT_EQ(count(files[0].svg, ">entropy 1.099 nats<"), 2u);
  EXPECT_EQ(count(files[0].svg, ">uniform 1.099<"), 2u);
  // Decoder self-attention is causal: 1, 2 and 3 keys, (ln 1 + ln 2 + ln 3) / 3 = 0.5973.
  EXPECT_NE(files[2].svg.find("rows: target queries, columns: target keys (causal"),
            std::string::npos);
  EXPECT_EQ(count(files[2].svg, ">entropy 0.597 nats<"), 2u);
  EXPECT_EQ(count(files[2].svg, ">&lt;bos&gt;<"), 2u * 2);  // down and across, in each head
  // Cross-attention: target queries down, the 3 source keys across.
  EXPECT_NE(files[3].svg.find("decoder layer 0 cross-attention (decoder.layers.0.cross_attn)<"),
            std::string::npos);
  EXPECT_NE(files[3].svg.find(">rows: target queries, columns: source keys<"), std::string::npos);
  EXPECT_EQ(count(files[3].svg, ">entropy 1.099 nats<"), 2u);
  // The model is as it was: training mode, no probes left on.
  EXPECT_TRUE(model.is_training());
  for (const AttentionLayer& a : attention_layers(model)) EXPECT_FALSE(a.layer->record_probe);
}

TEST_F(UniformMaps, TokensThatDoNotFitTheExampleAreRefused) {
  // Four source tokens for three keys seen and a PAD: the PAD would be drawn as a key.
  EXPECT_NO_THROW(attention_maps(model, example({"3", "1", "<eos>", "<pad>"})));
  // Two: the third key, which every query sees, would be left out as padding.
  EXPECT_THROW(attention_maps(model, example({"3", "1"})), Error);
  // Five: more than the model's four source positions.
  EXPECT_THROW(attention_maps(model, example({"3", "1", "<eos>", "a", "b"})), Error);
  EXPECT_THROW(attention_maps(model, {.title = "no forward", .encoder_tokens = {"3"}}), Error);
}

// 130 positions: 90 drawn on each axis (two heads share a figure's 128 x 128 cells), the
// entropy over all 130 queries. With q = 0 and a causal mask query i spreads evenly over i + 1
// keys: (ln 1 + ... + ln 130) / 130 = ln(130!) / 130.
TEST(AttentionMaps, ALongExampleIsDrawnInPartAndMeasuredWhole) {
  nn::ModelConfig c = tiny_config();
  c.layers = 1, c.max_len = 130;
  Generator gen(4);
  nn::DecoderLM model(c, gen);
  for (auto& [name, t] : model.state_dict())
    if (name.find(".q_proj.") != std::string::npos) t.fill_(0);
  AttentionExample example{.title = "long", .forward = [&] {
                             model.forward(from_indices(std::vector<int64_t>(130, 3), {1, 130}));
                           }};
  for (int i = 0; i < 130; ++i) example.decoder_tokens.push_back("t" + std::to_string(i));
  const std::vector<AttentionMapFile> files = attention_maps(model, example);
  ASSERT_EQ(files.size(), 1u);
  const std::string& svg = files[0].svg;
  EXPECT_EQ(count(svg, "class=\"cell\""), 2u * 90 * 90);
  EXPECT_NE(svg.find("the first 90 of 130 queries and 90 of 130 keys drawn"), std::string::npos);
  EXPECT_EQ(svg.find(">t90<"), std::string::npos);
  char entropy[64];
  std::snprintf(entropy, sizeof entropy, ">entropy %.3f nats<", std::lgamma(131.0) / 130);
  EXPECT_EQ(count(svg, entropy), 2u) << entropy;
}

// Sixteen heads of 128 positions made a 20 MB figure where docs/programs.md says one stays near
// a megabyte: they share 128 x 128 cells, 32 x 32 each.
TEST(AttentionMaps, ManyHeadsShareAFiguresCells) {
  nn::ModelConfig c = tiny_config();
  c.layers = 1, c.heads = 16, c.d_model = 32, c.max_len = 128;
  Generator gen(4);
  nn::DecoderLM model(c, gen);
  AttentionExample example{.title = "wide", .forward = [&] {
                             model.forward(from_indices(std::vector<int64_t>(128, 3), {1, 128}));
                           }};
  for (int i = 0; i < 128; ++i) example.decoder_tokens.push_back("t" + std::to_string(i));
  const std::string svg = attention_maps(model, example).at(0).svg;
  EXPECT_EQ(count(svg, "class=\"cell\""), 16u * 32 * 32);
  EXPECT_NE(svg.find("the first 32 of 128 queries and 32 of 128 keys drawn"), std::string::npos);
  EXPECT_LT(svg.size(), 1600000u);
}

TEST(VisibleChar, SpacesAndBytesThatAreNoCharacterShowAsSomething) {
  EXPECT_EQ(visible_char(' '), "\u2423");
  EXPECT_EQ(visible_char('\n'), "\u21b5");
  EXPECT_EQ(visible_char('\t'), "\u21e5");
  EXPECT_EQ(visible_char('a'), "a");
  EXPECT_EQ(visible_char('<'), "<");  // escaped by the renderer, as all text
  EXPECT_EQ(visible_char(0x07), "\\x07");
  EXPECT_EQ(visible_char(0xc3), "\\xc3");
}

}  // namespace
}  // namespace gradflow::training

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using AttentionMapsProgramTest = ProgramTest;

struct Expected {
  std::string program;
  std::vector<std::string> files;  // with --layers 1
  std::string label;               // a tick label one of the figures has, as a regex
};

// Each training program with --attention-maps: one SVG per attention layer, every head's
// panel, the tokens on both axes, the "wrote" line; a resumed run already at its last step
// draws them too.
TEST_F(AttentionMapsProgramTest, EveryTrainingProgramDrawsEachLayer) {
  const std::vector<Expected> expected = {
      {"seq2seq",
       {"decoder.layers.0.cross_attn.svg", "decoder.layers.0.self_attn.svg",
        "encoder.layers.0.self_attn.svg"},
       ">&lt;eos&gt;<"},
      {"recall", {"decoder.layers.0.self_attn.svg"}, ">\\|<"},     // SEP
      {"charlm", {"decoder.layers.0.self_attn.svg"}, ">\u2423<"},  // a space
      {"classify", {"encoder.layers.0.self_attn.svg"}, "class=\"row-label\">[0-7]<"}};
  ASSERT_EQ(expected.size(), programs_of_kind("training").size());
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.program);
    const std::string maps = path(e.program + "_maps"), out = path(e.program);
    std::vector<std::string> args = tiny_run_args(e.program, out, "2");
    args.insert(args.end(), {"--attention-maps", maps});
    Result r = run(program_path(e.program), args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("attention maps: wrote " + maps + "/"), std::string::npos) << r.out;
    std::set<std::string> written;
    for (const auto& entry : fs::directory_iterator(maps))
      written.insert(entry.path().filename().string());
    EXPECT_EQ(written, std::set<std::string>(e.files.begin(), e.files.end()));
    std::string all;
    for (const std::string& file : e.files) {
      const std::string svg = read(maps + "/" + file);
      SCOPED_TRACE(file);
      EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
      EXPECT_EQ(svg.find(">head 2<"), std::string::npos);  // --heads 2
      for (const char* head : {">head 0<", ">head 1<", " nats<"})
        EXPECT_NE(svg.find(head), std::string::npos) << head;
      EXPECT_NE(svg.find("class=\"row-label\""), std::string::npos);
      EXPECT_NE(svg.find("class=\"column-label\""), std::string::npos);
      all += svg;
    }
    EXPECT_TRUE(std::regex_search(all, std::regex(e.label))) << e.label;
    // Resumed at its last step: nothing to train, the maps all the same.
    const std::string again = path(e.program + "_again");
    std::vector<std::string> resume = {"--resume", out, "--attention-maps", again};
    const TinyFlags tiny = tiny_flags(e.program);
    resume.insert(resume.end(), tiny.session.begin(), tiny.session.end());
    r = run(program_path(e.program), resume);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const std::string& file : e.files)
      EXPECT_EQ(read(again + "/" + file), read(maps + "/" + file)) << file;
  }
}

// The maps' folder is checked when the flag is read, before training, and made only when the
// maps are written: a folder that cannot be written (found after training, all of it lost) and
// a .svg in it that is not a regular file (a FIFO hung the program after training) are refused;
// a refused command makes no folder. The maps are written atomically: no temporary is left.
TEST_F(AttentionMapsProgramTest, TheFolderIsCheckedBeforeTrainingAndMadeOnlyToWriteTheMaps) {
  const std::vector<std::string> tiny = tiny_run_args("seq2seq", path("run"), "2");
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = tiny;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  expect_usage_error(kSeq2seq, with({"--attention-maps", path("new_maps"), "--steps", "0"}));
  EXPECT_FALSE(fs::exists(path("new_maps")));
  expect_usage_error(kSeq2seq, with({"--attention-maps", "/proc/maps"}));
  fs::create_directories(path("maps"));
  ASSERT_EQ(::mkfifo(path("maps/encoder.layers.0.self_attn.svg").c_str(), 0600), 0);
  expect_usage_error(kSeq2seq, with({"--attention-maps", path("maps")}));
  EXPECT_FALSE(fs::exists(path("run")));
  fs::remove(path("maps/encoder.layers.0.self_attn.svg"));
  Result r = run(kSeq2seq, with({"--attention-maps", path("maps/deeper")}));
  ASSERT_EQ(r.code, 0) << r.err;
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(path("maps/deeper"))) {
    EXPECT_EQ(entry.path().extension(), ".svg") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 3u);
}

TEST_F(AttentionMapsProgramTest, TheFlagIsInHelpAndADirectoryThatCannotBeMadeIsRefused) {
  std::ofstream(path("a_file")) << "not a directory";
  for (const ListedProgram& p : programs_of_kind("training")) {
    SCOPED_TRACE(p.name);
    EXPECT_NE(run(p.path, {"--help"}).out.find("--attention-maps DIR"), std::string::npos);
    expect_usage_error(p.path, {"--attention-maps", path("a_file")});
    expect_usage_error(p.path, {"--attention-maps", path("a_file/maps")});
    expect_usage_error(p.path, {"--attention-maps", ""});
  }
}

}  // namespace
}  // namespace gradflow::testing
