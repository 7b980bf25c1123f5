// Every ModelConfig option from the command line: --positional, --norm,
// --activation and --dropout reach the config, are run flags a resume
// restores, and every config field round-trips through checkpoint metadata,
// older checkpoints included.
#include <gtest/gtest.h>

#include "examples/common/run_flags.h"
#include "examples/common/training.h"

namespace gradflow::examples {
namespace {

// A fresh command line with the shared training flags, as a program has.
struct Flags {
  cli::ArgParser args{"t", ""};
  RunFlags run{args};
  CommonFlags f;
  Flags() { add_common_flags(args, run, f); }
};

TEST(ModelFlags, EveryOptionReachesTheModelConfig) {
  Flags args_flags;
  auto& [args, run, f] = args_flags;
  nn::ModelConfig defaults = model_config(f, 10, 8);
  EXPECT_EQ(defaults.positional, "learned");
  EXPECT_EQ(defaults.norm, nn::NormPlacement::Pre);
  EXPECT_EQ(defaults.activation, "gelu");
  EXPECT_EQ(defaults.dropout, 0);

  args.parse({"--positional", "rope", "--norm", "post", "--activation", "relu", "--dropout", "0.1",
              "--head-dim", "6", "--scale", "qk_norm"});
  nn::ModelConfig c = model_config(f, 10, 8);
  EXPECT_EQ(c.positional, "rope");
  EXPECT_EQ(c.norm, nn::NormPlacement::Post);
  EXPECT_EQ(c.activation, "relu");
  EXPECT_EQ(c.dropout, 0.1);
  EXPECT_EQ(c.head_dim, 6);
  EXPECT_TRUE(c.scale.is("qk_norm"));
  EXPECT_NO_THROW(c.validate());
  // Dropout draws from one generator: the batch runs as one part.
  f.threads = 2;
  EXPECT_EQ(loop_options(f).parts, 1);
  f.dropout = 0;
  EXPECT_EQ(loop_options(f).parts, 2);

  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--positional", "nope"},
                                              {"--norm", "sandwich"},
                                              {"--activation", "tanh"},
                                              {"--dropout", "1"},
                                              {"--dropout", "-0.1"}}) {
    Flags again_flags;
    auto& [again, run_again, g] = again_flags;
    EXPECT_THROW(again.parse(bad), cli::UsageError) << bad[0] << " " << bad[1];
  }
}

TEST(ModelFlags, AResumeRestoresThemAndACheckpointBeforeThemTakesTheDefaults) {
  Flags args1_flags;
  auto& [args1, run1, f1] = args1_flags;
  args1.parse({"--positional", "sinusoidal", "--norm", "post", "--activation", "relu", "--dropout",
               "0.25"});
  const nn::Metadata saved = run1.to_metadata();

  Flags args2_flags;
  auto& [args2, run2, f2] = args2_flags;
  run2.restore(saved, {"--steps", "20"});
  EXPECT_EQ(f2.positional, "sinusoidal");
  EXPECT_EQ(f2.norm, "post");
  EXPECT_EQ(f2.activation, "relu");
  EXPECT_EQ(f2.dropout, 0.25);

  Flags args3_flags;
  auto& [args3, run3, f3] = args3_flags;
  EXPECT_THROW(run3.restore(saved, {"--positional", "rope"}), cli::UsageError);

  // A checkpoint written before these flags: their defaults, and another
  // value on the command line contradicts it.
  nn::Metadata old;
  for (const auto& kv : saved)
    if (kv.first != "flag.--positional" && kv.first != "flag.--norm" &&
        kv.first != "flag.--activation" && kv.first != "flag.--dropout")
      old.push_back(kv);
  ASSERT_EQ(old.size() + 4, saved.size());
  Flags args4_flags;
  auto& [args4, run4, f4] = args4_flags;
  run4.restore(old, {});
  EXPECT_EQ(f4.positional, "learned");
  EXPECT_EQ(f4.norm, "pre");
  EXPECT_EQ(f4.activation, "gelu");
  EXPECT_EQ(f4.dropout, 0);
  Flags args5_flags;
  auto& [args5, run5, f5] = args5_flags;
  EXPECT_THROW(run5.restore(old, {"--norm", "post"}), cli::UsageError);
}

TEST(ModelFlags, EveryConfigFieldRoundTripsAndOlderKeysRead) {
  nn::ModelConfig c;
  c.vocab = 7, c.d_model = 24, c.heads = 3, c.layers = 5, c.d_ff = 40, c.max_len = 9;
  c.scale = nn::ScaleMode::parse("learned");
  c.head_dim = 6, c.norm = nn::NormPlacement::Post, c.activation = "relu";
  c.positional = "rope", c.dropout = 0.125;
  const nn::Metadata m = config_metadata(c);
  EXPECT_EQ(nn::metadata_value(m, "config.norm"), "post");
  EXPECT_EQ(nn::metadata_value(m, "config.positional"), "rope");
  nn::ModelConfig d = config_from_metadata(m);
  EXPECT_EQ(config_metadata(d), m);
  EXPECT_EQ(d.norm, nn::NormPlacement::Post);
  EXPECT_EQ(d.positional, "rope");
  EXPECT_EQ(d.activation, "relu");
  EXPECT_EQ(d.dropout, 0.125);

  auto without = [&m](const std::string& key) {
    nn::Metadata out;
    for (const auto& kv : m)
      if (kv.first != key) out.push_back(kv);
    return out;
  };
  // A field every checkpoint has written may not go missing.
  EXPECT_THROW(config_from_metadata(without("config.positional")), cli::UsageError);
  EXPECT_THROW(config_from_metadata(without("config.norm")), cli::UsageError);
  nn::Metadata bad = m;
  for (auto& [key, value] : bad)
    if (key == "config.norm") value = "sandwich";
  EXPECT_THROW(config_from_metadata(bad), cli::UsageError);
}

}  // namespace
}  // namespace gradflow::examples
