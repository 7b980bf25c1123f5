// The claims table's rows C9 to C19 (claims.h): the --full training parts
// (C9 to C12), plain SGD (C13), depth at initialisation (C14, C15) and the
// number of keys (C16 to C19). Each part measures its own criteria and
// reports each one's outcome by its id.
#include "examples/study/claims.h"

namespace gradflow::study {

std::vector<Claim> claims_of_other_parts() {
  return {
      {.id = "C9",
       .statement = "QK normalisation lowers the sensitivity to the learning rate",
       .why = "Without it, high learning rates grow the logits until attention is one-hot and "
              "the loss rises or diverges; with q and k normalised the logits are bounded "
              "(Wortsman et al. 2023).",
       .section = kFull,
       .plain = "QK normalisation makes training less sensitive to the learning rate",
       .criteria = {{.id = "a",
                     .tests = "lowers the sensitivity to the learning rate",
                     .plain = "the LR sensitivity (nats), each QK-normalised mode minus "
                              "1/sqrt(d_k), paired by seed, at each d_k",
                     .test = Test::Below,
                     .margin = -0.05}}},
      {.id = "C10",
       .statement = "The best learning rate transfers across width only under muP",
       .why = "Under the standard parametrisation a wider model's updates change its outputs "
              "more, so its best learning rate falls with width; muP scales the hidden and "
              "output learning rates by 1/width and the attention by 1/d_k so that they do not "
              "(Yang et al. 2022).",
       .section = kFull,
       .plain = "The best learning rate stays put across width under muP and moves under the "
                "standard parametrisation",
       .criteria = {{.id = "a",
                     .tests = "transfers across width",
                     .plain = "grid steps muP's best learning rate moves across the widths",
                     .test = Test::Below,
                     .margin = 2},
                    {.id = "b",
                     .tests = "only under muP",
                     .plain = "grid steps a standard parametrisation's best learning rate "
                              "moves across the widths",
                     .test = Test::Above,
                     .margin = 1}}},
      {.id = "C11",
       .statement = "Post-LN needs learning-rate warm-up where pre-LN does not",
       .why = "In post-LN the gradients of the layers near the output are large at "
              "initialisation, so early full-size Adam steps can wreck them; pre-LN's gradients "
              "are even across depth (Xiong et al. 2020).",
       .section = kFull,
       .plain = "Post-LN needs warm-up and pre-LN does not",
       .criteria = {{.id = "a",
                     .tests = "Post-LN needs learning-rate warm-up",
                     .plain = "modes where post-LN ends detectably worse without warm-up "
                              "(margin 0.05 nats), of those trained",
                     .test = Test::Above,
                     .margin = 0.5},
                    {.id = "b",
                     .tests = "where pre-LN does not",
                     .plain = "modes where pre-LN ends detectably worse without warm-up",
                     .test = Test::Below,
                     .margin = 1}}},
      {.id = "C12",
       .statement = "Loss spikes and divergence follow attention entropy collapse",
       .why = "When a head's entropy collapses its softmax passes almost no gradient and tiny "
              "changes in the logits swing its output, which shows as spikes in the loss (Zhai "
              "et al. 2023).",
       .section = kFull,
       .plain = "Runs whose attention entropy collapses spike or diverge more, and afterwards",
       .criteria = {{.id = "a",
                     .tests = "Loss spikes and divergence follow attention entropy collapse",
                     .plain = "the share of runs with a spike or divergence, runs whose entropy "
                              "fell below 0.1 minus the others",
                     .test = Test::Above,
                     .margin = 0,
                     .absolute = true},
                    {.id = "b",
                     .tests = "follow",
                     .plain = "the share of runs with both where the collapse came first",
                     .test = Test::Above,
                     .margin = 0.5}}},
      {.id = "C13",
       .statement = "Under plain SGD, unscaled attention's W_Q gradient is smaller relative to "
                    "W_V's than with 1/sqrt(d_k), and it learns worse, the more so at the "
                    "larger d_k, each at its best learning rate",
       .why = "Without the scale the logits' variance grows with d_k, the softmax saturates and "
              "passes little gradient to W_Q and W_K; under SGD (unlike Adam) a small gradient "
              "is a small step, so the query and key weights barely move whatever the learning "
              "rate, and a learning rate large enough to move them is too large for the rest of "
              "the model.",
       .section = kSgd,
       .plain = "Under plain SGD unscaled attention learns worse at large d_k, with a smaller "
                "W_Q gradient relative to W_V's",
       .criteria = {{.id = "a",
                     .tests = "W_Q gradient is smaller relative to W_V's",
                     .plain = "log10 of the W_Q/W_V gradient ratio at d_k 256 and the common "
                              "learning rate 0.1, unscaled minus 1/sqrt(d_k), paired by seed",
                     .test = Test::Below,
                     .margin = 0,
                     .seeds = 10},
                    {.id = "b",
                     .tests = "W_Q gradient is smaller relative to W_V's",
                     .plain = "the same at each arm's chosen learning rate",
                     .test = Test::Below,
                     .margin = 0,
                     .seeds = 10},
                    {.id = "c",
                     .tests = "it learns worse",
                     .plain = "the capped final loss at d_k 256 (nats), unscaled minus "
                              "1/sqrt(d_k), paired by seed",
                     .test = Test::Above,
                     .margin = 0.05},
                    {.id = "d",
                     .tests = "the more so at the larger d_k",
                     .plain = "that gap at d_k 256 minus the gap at d_k 16, seed by seed",
                     .test = Test::Above,
                     .margin = 0}},
       .figure = "sgd_lr.svg",
       .changed = "2026-12-06: the words say what (a) to (d) test (\"vanishing W_Q gradient "
                  "makes it learn worse\" claimed a cause no criterion varies); (a) and (b), "
                  "which moved with the seed, read 10 comparison seeds"},
      {.id = "C14",
       .statement = "At initialisation post-LN's gradients grow toward the output, pre-LN's are "
                    "even across layers",
       .why = "Xiong et al. 2020 show by mean-field arguments that in post-LN the expected "
              "gradient of the feed-forward weights near the output is large (the last layer's "
              "||dL/dW_2||_F does not shrink with depth) while in pre-LN it shrinks like "
              "1/sqrt(L) and is about the same at every layer; they measure it layer by layer "
              "on a 6-layer translation model.",
       .section = kDepth,
       .plain = "At initialisation post-LN's gradients grow toward the output and pre-LN's are "
                "even",
       .criteria = {{.id = "a",
                     .tests = "post-LN's gradients grow toward the output",
                     .plain = "post-LN's feed-forward gradient, last layer over first",
                     .test = Test::Above,
                     .margin = 1},
                    {.id = "b",
                     .tests = "pre-LN's are even across layers",
                     .plain = "pre-LN's feed-forward gradient, last layer over first (even: "
                              "within a factor of 2)",
                     .test = Test::Within,
                     .margin = 0.6931471805599453}}},
      {.id = "C15",
       .statement = "Self-attention alone collapses tokens to one direction with depth (rank "
                    "collapse); at initialisation the residual connections of a transformer "
                    "block slow it but do not stop it",
       .why = "Averaging with softmax weights is a contraction toward the mean token: without "
              "residual connections or feed-forward layers, repeated attention makes tokens "
              "alike doubly exponentially fast with depth (Dong et al. 2021). The residual path "
              "carries each token's own value around the attention, so a block moves the tokens "
              "only part of the way toward their mean; but every block moves them some way, so "
              "at initialisation they still grow alike with depth (Noci et al. 2022, who scale "
              "the residual branches down with depth to stop it). Flatter attention (a smaller "
              "scale) averages more and collapses sooner.",
       .section = kDepth,
       .plain = "Attention alone makes the tokens alike with depth; the residual path slows "
                "this but does not stop it",
       .criteria = {{.id = "a",
                     .tests = "Self-attention alone collapses tokens to one direction with depth",
                     .plain = "the mean cosine between tokens after the last layer of attention "
                              "alone",
                     .test = Test::Above,
                     .margin = 0.9,
                     .absolute = true},
                    {.id = "b",
                     .tests = "slow it",
                     .plain = "the token cosine after the last whole block, pre- and post-LN",
                     .test = Test::Below,
                     .margin = 0.5},
                    {.id = "c",
                     .tests = "but do not stop it",
                     .plain = "the token cosine's rise from the first block to the last, paired "
                              "by draw, pre- and post-LN",
                     .test = Test::Above,
                     .margin = 0,
                     .absolute = true},
                    {.id = "d",
                     .tests = "collapses tokens to one direction with depth",
                     .plain = "the token cosine after one layer of attention alone, 1/d_k "
                              "minus unscaled (flatter attention averages more)",
                     .test = Test::Above,
                     .margin = 0}},
       .figure = "depth_cosine.svg"},
      {.id = "C16",
       .statement = "With a fixed scale, attention disperses as the number of keys grows",
       .why = "The softmax's denominator is a sum over n keys, so it grows like n, while the "
              "top logit (the planted key's, or the largest of n random ones, which grows only "
              "like sqrt(log n)) does not: with a fixed factor the top weight must fall, at "
              "last like 1/n. A factor large enough that the top logit stands far above the "
              "rest (unscaled q.k at d_k 64: a planted logit of about 64 against noise of sd 8) "
              "postpones the fall past the n measured.",
       .section = kKeys,
       .plain = "With a fixed scale, attention disperses as the number of keys grows",
       .criteria = {{.id = "a",
                     .tests = "attention disperses as the number of keys grows",
                     .plain = "the slopes of log(planted mass) and log(top weight) against log n "
                              "over the upper half of n, per fixed-scale mode",
                     .test = Test::Below,
                     .margin = -0.05,
                     .absolute = true}}},
      {.id = "C17",
       .statement = "Log-n scaling keeps attention sharp as the number of keys grows",
       .why = "Multiplying the logits by c log n turns a logit gap g into n^(c g): the top "
              "key's share grows with n as fast as the denominator's n terms, so the weight on "
              "a matching key need not fall. ssmax starts equal to 1/sqrt(d_k) at the built "
              "length L and grows past it.",
       .section = kKeys,
       .plain = "Log-n scaling keeps attention sharp as the number of keys grows",
       .criteria = {{.id = "a",
                     .tests = "keeps attention sharp as the number of keys grows",
                     .plain = "the slope of log(planted mass) against log n over the upper half "
                              "of n, and the planted mass at the largest n against n = L, per "
                              "log-n mode",
                     .test = Test::Above,
                     .margin = -0.05}}},
      {.id = "C18",
       .statement = "Log-n scaling extends to longer contexts better than 1/sqrt(d_k)",
       .why = "Trained at one length, a fixed scale shares the answer's weight among more keys "
              "when the sequence grows; with the logits times log n the answer's logit grows "
              "with the number of keys and keeps its share.",
       .section = kKeys,
       .plain = "Log-n scaling extends to longer contexts better than 1/sqrt(d_k)",
       .criteria = {{.id = "a",
                     .tests = "extends to longer contexts better than 1/sqrt(d_k)",
                     .plain = "held-out accuracy at each longer test length, the mode minus "
                              "1/sqrt(d_k), paired by seed, Holm over the comparisons",
                     .test = Test::Above,
                     .margin = 0}}},
      {.id = "C19",
       .statement = "The critical factor gamma* in gamma log n matches 1/(1 - rho) at toy scale",
       .why = "Token i's weight on itself is about 1 / (1 + (n - 1) n^(-gamma (1 - rho))): "
              "below gamma (1 - rho) = 1 the other n - 1 tokens outweigh it and it collapses "
              "onto their mean, above it keeps itself.",
       .section = kKeys,
       .plain = "The critical factor of gamma log n matches 1/(1 - rho)",
       .criteria = {{.id = "a",
                     .tests = "matches 1/(1 - rho)",
                     .plain = "the measured gamma* over 1/(1 - rho), minus 1, per rho",
                     .test = Test::Within,
                     .margin = 0.15}}},
  };
}

}  // namespace gradflow::study
