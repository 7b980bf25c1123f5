// Every ModelConfig option from the command line: --positional, --norm,
// --norm-type, --ffn, --activation and --dropout reach the config, are run
// flags a resume restores, and every config field round-trips through
// checkpoint metadata, older checkpoints included: a field missing from one
// reads as its row's `absent` says.
#include <gtest/gtest.h>

#include "examples/toolkit/training/run_flags.h"
#include "examples/toolkit/training/training.h"

namespace gradflow::training {
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
  EXPECT_EQ(defaults.norm_type, "layernorm");
  EXPECT_EQ(defaults.ffn, "mlp");
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
  f.model.dropout = 0;
  EXPECT_EQ(loop_options(f).parts, 2);

  Flags kinds_flags;
  kinds_flags.args.parse({"--norm-type", "rmsnorm", "--ffn", "swiglu"});
  nn::ModelConfig kinds = model_config(kinds_flags.f, 10, 8);
  EXPECT_EQ(kinds.norm_type, "rmsnorm");
  EXPECT_EQ(kinds.ffn, "swiglu");
  EXPECT_EQ(kinds.block().norm_type, "rmsnorm");
  EXPECT_EQ(kinds.block().ffn, "swiglu");
  EXPECT_NO_THROW(kinds.validate());

  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--positional", "nope"},
                                              {"--norm", "sandwich"},
                                              {"--norm-type", "batchnorm"},
                                              {"--ffn", "geglu"},
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
               "0.25", "--norm-type", "rmsnorm"});
  const nn::Metadata saved = run1.to_metadata();

  Flags args2_flags;
  auto& [args2, run2, f2] = args2_flags;
  run2.restore(saved, {"--steps", "20"});
  EXPECT_EQ(f2.model.positional, "sinusoidal");
  EXPECT_EQ(f2.model.norm, nn::NormPlacement::Post);
  EXPECT_EQ(f2.model.activation, "relu");
  EXPECT_EQ(f2.model.dropout, 0.25);
  EXPECT_EQ(f2.model.norm_type, "rmsnorm");

  Flags args3_flags;
  auto& [args3, run3, f3] = args3_flags;
  EXPECT_THROW(run3.restore(saved, {"--positional", "rope"}), cli::UsageError);

  // A checkpoint written before these flags: their defaults, and another
  // value on the command line contradicts it.
  nn::Metadata old;
  for (const auto& kv : saved)
    if (kv.first != "flag.--positional" && kv.first != "flag.--norm" &&
        kv.first != "flag.--activation" && kv.first != "flag.--dropout" &&
        kv.first != "flag.--norm-type" && kv.first != "flag.--ffn")
      old.push_back(kv);
  ASSERT_EQ(old.size() + 6, saved.size());
  Flags args4_flags;
  auto& [args4, run4, f4] = args4_flags;
  run4.restore(old, {});
  EXPECT_EQ(f4.model.positional, "learned");
  EXPECT_EQ(f4.model.norm, nn::NormPlacement::Pre);
  EXPECT_EQ(f4.model.activation, "gelu");
  EXPECT_EQ(f4.model.dropout, 0);
  EXPECT_EQ(f4.model.norm_type, "layernorm");
  EXPECT_EQ(f4.model.ffn, "mlp");
  for (const std::vector<std::string>& other : {std::vector<std::string>{"--norm", "post"},
                                                {"--norm-type", "rmsnorm"},
                                                {"--ffn", "swiglu"}}) {
    Flags args5_flags;
    auto& [args5, run5, f5] = args5_flags;
    EXPECT_THROW(run5.restore(old, other), cli::UsageError) << other[0];
    // As a program does it: the command line parsed before the checkpoint is
    // read. The flag then holds the command line's value, which must still be
    // compared with the default the checkpoint ran with (it once was not).
    Flags args6_flags;
    auto& [args6, run6, f6] = args6_flags;
    args6.parse(other);
    EXPECT_THROW(run6.restore(old, other), cli::UsageError) << other[0];
  }
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

  // RMSNorm and SwiGLU round-trip too.
  nn::ModelConfig kinds = c;
  kinds.norm_type = "rmsnorm", kinds.ffn = "swiglu", kinds.activation = "gelu";
  EXPECT_EQ(config_metadata(config_from_metadata(config_metadata(kinds))), config_metadata(kinds));
}

// Each field's row says what a checkpoint without it meant: the fields added
// since the first checkpoints (head_dim, norm_type, ffn) read as the model
// every checkpoint before them built; every other missing field is refused,
// naming it.
TEST(ModelFlags, EachFieldSaysWhatItsAbsenceMeans) {
  nn::ModelConfig c;
  c.vocab = 7, c.d_model = 24, c.heads = 3, c.head_dim = 6, c.norm_type = "rmsnorm";
  c.ffn = "swiglu";
  const nn::Metadata m = config_metadata(c);
  std::vector<std::string> assumed;
  for (const nn::ModelField& field : nn::model_fields()) {
    const std::string key = std::string("config.") + field.name;
    nn::Metadata without;
    for (const auto& kv : m)
      if (kv.first != key) without.push_back(kv);
    ASSERT_EQ(without.size() + 1, m.size()) << key;
    if (field.absent == nn::kRefuseIfAbsent) {
      try {
        config_from_metadata(without);
        ADD_FAILURE() << key << " missing was not refused";
      } catch (const cli::UsageError& e) {
        EXPECT_EQ(std::string(e.what()), "--resume: bad model config in the checkpoint: no " + key);
      }
      continue;
    }
    assumed.push_back(field.name);
    const nn::ModelConfig read = config_from_metadata(without);
    EXPECT_EQ(field_text(field, read), field.absent) << key;
    EXPECT_EQ(field_text(field, nn::ModelConfig{}), field.absent)
        << key << ": what an older checkpoint meant is the default, today's behaviour";
  }
  EXPECT_EQ(assumed, (std::vector<std::string>{"head_dim", "norm_type", "ffn"}));
  // All three at once: a checkpoint from before head_dim.
  nn::Metadata oldest;
  for (const auto& kv : m)
    if (kv.first != "config.head_dim" && kv.first != "config.norm_type" && kv.first != "config.ffn")
      oldest.push_back(kv);
  nn::ModelConfig d = c;
  d.head_dim = 0, d.norm_type = "layernorm", d.ffn = "mlp";
  EXPECT_EQ(config_metadata(config_from_metadata(oldest)), config_metadata(d));
}

// The table of nn/model_config.h is the one list: every field a flag sets is
// a run flag under its dashed name and a config.* key, with the same text,
// and a value set through the flag is the value the config holds.
TEST(ModelFlags, EveryFieldOfTheTableIsAFlagAndAMetadataKey) {
  nn::ModelConfig want;
  want.d_model = 24, want.heads = 3, want.layers = 5, want.d_ff = 40, want.head_dim = 6;
  want.scale = nn::ScaleMode::parse("const:0.25");
  want.norm = nn::NormPlacement::Post, want.activation = "relu";
  want.positional = "alibi", want.dropout = 0.125, want.norm_type = "rmsnorm";
  Flags flags;
  auto& [args, run, f] = flags;
  std::vector<std::string> line;
  int64_t flagged = 0;
  for (const nn::ModelField& field : nn::model_fields()) {
    if (field.from_data) continue;
    ++flagged;
    line.push_back(flag_name(field));
    line.push_back(field_text(field, want));
  }
  EXPECT_EQ(flagged, 12);  // all but vocab and max_len
  args.parse(line);
  const nn::ModelConfig got = model_config(f, want.vocab, want.max_len);
  EXPECT_EQ(config_metadata(got), config_metadata(want));
  const nn::Metadata flags_meta = run.to_metadata(), config_meta = config_metadata(got);
  for (const nn::ModelField& field : nn::model_fields()) {
    const std::string text = field_text(field, want);
    EXPECT_EQ(nn::metadata_value(config_meta, std::string("config.") + field.name), text);
    if (!field.from_data) {
      EXPECT_EQ(nn::metadata_value(flags_meta, "flag." + flag_name(field)), text) << field.name;
    }
  }
  EXPECT_EQ(flag_name(nn::model_fields()[1]), "--d-model");
}

TEST(ModelFlags, EachFieldChecksItsOwnValueAndValidateTheRest) {
  auto error_of = [](std::vector<std::string> line) {
    Flags flags;
    try {
      flags.args.parse(line);
      flags.f.model.validate();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({"--d-model", "0"}), "--d-model: must be positive, got 0");
  EXPECT_EQ(error_of({"--head-dim", "-1"}), "--head-dim: must be >= 0, got -1");
  EXPECT_EQ(error_of({"--layers", "2.5"}), "--layers: layers: expected an integer, got \"2.5\"");
  EXPECT_EQ(error_of({"--dropout", "1"}), "--dropout: must be in [0, 1), got 1");
  EXPECT_EQ(error_of({"--scale", "const:0"}), "--scale: const: must be > 0, got 0");
  EXPECT_EQ(error_of({"--d-model", "30", "--heads", "4"}),
            "model config: d_model (30) must be divisible by heads (4) unless head_dim is set");
  EXPECT_EQ(error_of({"--positional", "rope", "--head-dim", "5"}),
            "model config: positional rope: rope turns pairs of dimensions, so d_k must be even, "
            "got 5");
  EXPECT_EQ(error_of({"--d-model", "30", "--heads", "4", "--head-dim", "8"}), "no error");
  EXPECT_EQ(error_of({"--ffn", "swiglu", "--activation", "relu"}),
            "model config: ffn swiglu takes no activation (its own is fixed); activation relu is "
            "for ffn mlp");
  EXPECT_EQ(error_of({"--ffn", "swiglu", "--norm-type", "rmsnorm"}), "no error");
  nn::ModelConfig c;
  c.positional = "nope";
  EXPECT_THROW(
      {
        try {
          c.validate();
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(),
                       "model config: positional unknown 'nope' (expected one of learned, "
                       "sinusoidal, rope, alibi, none)");
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace gradflow::training
