// The study's arms: what is compared, as one table.
//
// An arm is a scale mode of the library (nn/scale_modes.h) and, for the two
// controls, a change to how W_Q and W_K start or learn. Everything the study
// does differently per arm reads this table: which runs train it, how its
// layer is built and initialised, its learning-rate factor, how figures draw
// it. So adding an arm is one row of arms() (docs/study.md, "Adding an arm"),
// and every scale mode of the library is already an arm without a row of its
// own (`--modes inv_sqrt_dk,softcap`): it trains only when asked for, drawn
// dashed in a colour no row has.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nn/attention.h"

namespace gradflow::study {

// How a figure draws an arm, the same in every panel, so a reader learns it
// once: the default arms and `learned` each have a colour of their own
// (Okabe-Ito's, svg_plot.h); the others share one of those colours, dashed,
// and are never drawn beside the arm they share it with (mode_panels). An
// arm without a row is drawn dashed in a colour no row has (find_arm).
struct ModeLook {
  std::string_view color;
  bool dashed = false;
};

// Which runs train an arm. The parts at initialisation (cheap) measure every
// arm trained with --full.
enum class Trained {
  ByDefault,  // the default run's arms (it stays within a few minutes)
  WithFull,   // --full's too
  OnRequest,  // only when --modes (or a part's own list) names it
};

struct Arm {
  std::string name{};     // as in --modes, CSV files and figures
  std::string scale{};    // the layer's nn::ScaleMode
  std::string summary{};  // one line, for --help and the report
  // W_Q and W_K (and their biases) start d_k^qk_init_power times their
  // initialisation, and learn at lr x d_k^qk_lr_power (their own parameter
  // group); 0: as every other weight.
  double qk_init_power = 0, qk_lr_power = 0;
  Trained trained = Trained::OnRequest;
  ModeLook look = {};
  // Drawn in every panel of a figure split over several panels, to compare
  // against: unscaled attention and the reference.
  bool anchor = false;
};

// Every arm with a row, in the order figures draw them (the order fixes
// their colours and the init part's random streams).
const std::vector<Arm>& arms();
// Appends a row, for an experiment of your own without editing the table
// (the worked example's test does): call it before the study starts, as the
// table is read by every job's thread without a lock. Fails on a name that
// is taken or a scale mode the library does not have.
void add_arm(const Arm& row);
// The row named `name`, else the library's scale mode of that name as an
// arm (OnRequest, dashed in a colour of its own: one per mode of the
// library without a row, so softcap:5 and const:0.25 never share one, but
// const:0.25 and const:0.5 do and are drawn in different panels); nullopt
// when it is neither.
std::optional<Arm> find_arm(const std::string& name);
// find_arm, throwing Error that lists every valid name when there is none.
Arm arm(const std::string& name);
// "none, inv_sqrt_dk, ..., or any scale mode of the library: const:<value>,
// softcap[:<value>, default 30]": for help and errors, the defaults read
// from the library's table.
std::string arm_names();
// `names` (the arms a part measured or trained, repeats allowed) in the
// order figures and claims list arms: the table's order, then the arms
// without a row in the order `names` first gives them.
std::vector<std::string> in_drawing_order(const std::vector<std::string>& names);
// The arms the parts at initialisation (init, depth) measure: every arm
// --full trains, in table order, then those of `requested` (--modes) that
// are not among them, in its order. The first keep their random streams.
std::vector<std::string> measured_arms(const std::vector<std::string>& requested);

// The arm every other is compared against, seed by seed: 1/sqrt(d_k).
inline constexpr const char* kDefaultMode = "inv_sqrt_dk";
bool is_reference(const std::string& mode);
// Unscaled attention whose W_Q and W_K start d_k^(-1/4) times smaller, so
// its logits start with the variance of 1/sqrt(d_k)'s: it separates
// saturation at initialisation from what training does to an unscaled layer.
inline constexpr const char* kControl = "none_small_init";
// The control whose W_Q and W_K also learn at lr x d_k^(-1/4), which under
// Adam is 1/sqrt(d_k) in other coordinates (docs/study.md, "Scale versus
// learning rate").
inline constexpr const char* kReparam = "none_reparam";
// Unscaled attention started as `none` (saturated) whose W_Q and W_K learn
// at lr x d_k^(-1/4), as kReparam's: the fourth cell of the factorial
// start x learning rate.
inline constexpr const char* kSlowQk = "none_slow_qk";

// The arms --full trains, in table order (study_modes), and those the
// default run trains (default_modes).
std::vector<std::string> study_modes();
std::vector<std::string> default_modes();
bool trained_by_default(const std::string& mode);

nn::ScaleMode scale_mode_of(const std::string& mode);
// Whether the arm's layer normalises q and k before their product (qk_norm,
// qk_l2norm): its logits are bounded, whatever the weights do.
bool qk_normalised(const std::string& mode);
// Whether the arm changes how W_Q and W_K start (the controls): its q and k
// are then not unit-variance, so the init part's random-vector experiment,
// which stands for a layer with unit-variance q and k, does not measure it.
bool changes_qk_init(const std::string& mode);
// The arm's learning-rate factor for W_Q and W_K (and their biases) at d_k:
// d_k^qk_lr_power; 1 for most arms.
double qk_lr_factor(const std::string& mode, int64_t d_k);
bool has_qk_lr_factor(const std::string& mode);
// A scale mode's variant as a layer built for `built_len` keys starts with it
// (null for a mode without one), for the parts that measure attention on
// random q and k without a layer (init, length).
std::shared_ptr<nn::AttentionVariant> mode_variant(const nn::ScaleMode& mode, int64_t d_k,
                                                   int64_t built_len);
// `variant` if it transforms the scores, else null.
std::shared_ptr<nn::AttentionVariant> transforming(std::shared_ptr<nn::AttentionVariant> variant);
// `logits` (..., T, S), the fixed factor times q.k, through the variant's
// transform of the scores (softcap's cap) as its layer's softmax sees them:
// the library's own code, so any mode that transforms scores is measured
// with its transform. `logits` itself for a null variant or one that does not.
Tensor transformed_scores(const nn::AttentionVariant* variant, const Tensor& logits);
// The arm's initialisation, applied to a freshly built layer (W_Q, W_K and
// their biases times d_k^qk_init_power; nothing for most arms).
void apply_mode_init(nn::MultiHeadAttention& attention, const std::string& mode);
// W_Q and W_K (and their biases) times `factor`, in place: q and k scale by
// it, q.k by its square (apply_mode_init; the qk-rate part's start).
void scale_qk_projections(nn::MultiHeadAttention& attention, double factor);

}  // namespace gradflow::study
