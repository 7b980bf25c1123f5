#include "examples/study/claims.h"

#include "tensor/error.h"

namespace gradflow::study {

namespace {

// The headings of docs/study.md's "The claims" that the rows point to, one
// per group of claims, in the page's order.
constexpr const char* kAtInit = "Claims at initialisation";
constexpr const char* kTraining = "Claims about training";
constexpr const char* kFull = "Claims of the `--full` training parts";
constexpr const char* kSgd = "Claims under plain SGD";
constexpr const char* kDepth = "Claims about depth";
constexpr const char* kKeys = "Claims about the number of keys";

}  // namespace

const std::vector<Claim>& claims() {
  static const std::vector<Claim> table = {
      {.id = "C1",
       .identity = true,
       .statement = "If the components of q and k are independent with mean 0 and variance 1, "
                    "then Var(q . k) = d_k and the std is sqrt(d_k) (8 at d_k = 64)",
       .why = "q.k is a sum of d_k independent products q_i k_i, each of mean 0 and variance 1.",
       .section = kAtInit},
      {.id = "C2",
       .identity = true,
       .statement = "With s = 1/sqrt(d_k) the logit variance is 1 at every d_k",
       .why = "Var(s x) = s^2 Var(x) = d_k / d_k.",
       .section = kAtInit},
      {.id = "C3",
       .identity = true,
       .statement = "With s = 1/d_k the logit variance is 1/d_k",
       .why = "Var(q.k / d_k) = d_k / d_k^2.",
       .section = kAtInit},
      {.id = "C3",
       .statement = "With s = 1/d_k the softmax becomes nearly uniform and attention loses focus",
       .why = "Var(q.k / d_k) = d_k / d_k^2; logits of std 1/sqrt(d_k) barely differ, so every "
              "weight is close to 1/n; a layer that cannot focus must learn larger q and k first.",
       .section = kAtInit},
      {.id = "C4",
       .identity = true,
       .statement = "With s = 1/(2 sqrt(d_k)) the logit variance is 1/4",
       .why = "Var = d_k / (4 d_k).",
       .section = kAtInit},
      {.id = "C4",
       .statement = "With s = 1/(2 sqrt(d_k)) attention is still too flat",
       .why = "Var = d_k / (4 d_k); the logits' std is 1/2, so the softmax is flatter than with "
              "1/sqrt(d_k) at every d_k.",
       .section = kAtInit},
      {.id = "C5",
       .statement = "Without a scale, a large d_k saturates the softmax (one weight close to 1); "
                    "the gradient through it vanishes, and learning slows or stops",
       .why = "The logits' std grows like sqrt(d_k); the largest one then takes almost all the "
              "weight, and the softmax Jacobian diag(p) - pp^T, through which every gradient to "
              "W_Q and W_K passes, goes to 0.",
       .section = kAtInit},
      {.id = "C6",
       .statement = "The softmax Jacobian diag(p) - p p^T tends to 0 as p becomes one-hot and "
                    "has entries of order 1/n when p is uniform",
       .why = "For one-hot p every entry p_i (delta_ij - p_j) is 0; for p = 1/n the entries are "
              "1/n - 1/n^2 on the diagonal and -1/n^2 off it, Frobenius norm sqrt(1/n - 1/n^2).",
       .section = kAtInit},
      {.id = "C7",
       .statement = "In training the scale changes how fast and how well a transformer learns, "
                    "and 1/sqrt(d_k) is the balanced choice",
       .why = "Too small a scale starts flat and must grow q and k first; too large a scale "
              "saturates and starves W_Q and W_K of gradient; 1/sqrt(d_k) keeps the logits' "
              "variance at that of the inputs' at every d_k.",
       .section = kTraining},
      {.id = "C8",
       .statement = "Without QK normalisation, larger logits go with entropy collapse and "
                    "vanishing Q/K gradients",
       .why = "As q and k align in training, |q.k| grows; the softmax sharpens (entropy falls) "
              "and its Jacobian shrinks, which cuts the gradient to W_Q and W_K but not to W_V "
              "(Dehghani et al. 2023; Wortsman et al. 2023). Normalising q and k bounds the "
              "logits.",
       .section = kTraining},
      {.id = "C9",
       .statement = "QK normalisation lowers the sensitivity to the learning rate",
       .why = "Without it, high learning rates grow the logits until attention is one-hot and "
              "the loss rises or diverges; with q and k normalised the logits are bounded "
              "(Wortsman et al. 2023).",
       .section = kFull},
      {.id = "C10",
       .statement = "The best learning rate transfers across width only under muP",
       .why = "Under the standard parametrisation a wider model's updates change its outputs "
              "more, so its best learning rate falls with width; muP scales the hidden and "
              "output learning rates by 1/width and the attention by 1/d_k so that they do not "
              "(Yang et al. 2022).",
       .section = kFull},
      {.id = "C11",
       .statement = "Post-LN needs learning-rate warm-up where pre-LN does not",
       .why = "In post-LN the gradients of the layers near the output are large at "
              "initialisation, so early full-size Adam steps can wreck them; pre-LN's gradients "
              "are even across depth (Xiong et al. 2020).",
       .section = kFull},
      {.id = "C12",
       .statement = "Loss spikes and divergence follow attention entropy collapse",
       .why = "When a head's entropy collapses its softmax passes almost no gradient and tiny "
              "changes in the logits swing its output, which shows as spikes in the loss (Zhai "
              "et al. 2023).",
       .section = kFull},
      {.id = "C13",
       .statement = "Under SGD, where a step is as large as its gradient, unscaled attention's "
                    "vanishing W_Q gradient makes it learn worse than 1/sqrt(d_k) at large d_k, "
                    "each at its best learning rate",
       .why = "Without the scale the logits' variance grows with d_k, the softmax saturates and "
              "passes little gradient to W_Q and W_K; under SGD (unlike Adam) a small gradient "
              "is a small step, so the query and key weights barely move whatever the learning "
              "rate, and a learning rate large enough to move them is too large for the rest of "
              "the model.",
       .section = kSgd},
      {.id = "C14",
       .statement = "At initialisation post-LN's gradients grow toward the output, pre-LN's are "
                    "even across layers",
       .why = "Xiong et al. 2020 show by mean-field arguments that in post-LN the expected "
              "gradient of the feed-forward weights near the output is large (the last layer's "
              "||dL/dW_2||_F does not shrink with depth) while in pre-LN it shrinks like "
              "1/sqrt(L) and is about the same at every layer; they measure it layer by layer "
              "on a 6-layer translation model.",
       .section = kDepth},
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
       .section = kDepth},
      {.id = "C16",
       .statement = "With a fixed scale, attention disperses as the number of keys grows",
       .why = "The softmax's denominator is a sum over n keys, so it grows like n, while the "
              "top logit (the planted key's, or the largest of n random ones, which grows only "
              "like sqrt(log n)) does not: with a fixed factor the top weight must fall, at "
              "last like 1/n. A factor large enough that the top logit stands far above the "
              "rest (unscaled q.k at d_k 64: a planted logit of about 64 against noise of sd 8) "
              "postpones the fall past the n measured.",
       .section = kKeys},
      {.id = "C17",
       .statement = "Log-n scaling keeps attention sharp as the number of keys grows",
       .why = "Multiplying the logits by c log n turns a logit gap g into n^(c g): the top "
              "key's share grows with n as fast as the denominator's n terms, so the weight on "
              "a matching key need not fall. ssmax starts equal to 1/sqrt(d_k) at the built "
              "length L and grows past it.",
       .section = kKeys},
      {.id = "C18",
       .statement = "Log-n scaling extends to longer contexts better than 1/sqrt(d_k)",
       .why = "Trained at one length, a fixed scale shares the answer's weight among more keys "
              "when the sequence grows; with the logits times log n the answer's logit grows "
              "with the number of keys and keeps its share.",
       .section = kKeys},
      {.id = "C19",
       .statement = "The critical factor gamma* in gamma log n matches 1/(1 - rho) at toy scale",
       .why = "Token i's weight on itself is about 1 / (1 + (n - 1) n^(-gamma (1 - rho))): "
              "below gamma (1 - rho) = 1 the other n - 1 tokens outweigh it and it collapses "
              "onto their mean, above it keeps itself.",
       .section = kKeys},
      {.id = "C20",
       .statement = "Without a scale, the gradient that reaches the softmax's input is not smaller "
                    "at initialisation at large d_k, and collapses during training",
       .why = "A softmax that starts sharp but not one-hot still passes each score a gradient; "
              "as training grows the unscaled logits (their std is already sqrt(d_k)/3 at the "
              "start) the top weight tends to 1, the Jacobian diag(p) - p p^T to 0, and the "
              "gradient at the scores S with it. dL/dW_Q = s X^T (dL/dS) K carries the factor "
              "s once more, so this is measured at S, where the scale does not multiply it.",
       .section = kTraining},
      {.id = "C21",
       .statement = "Without a scale, attention's entropy collapse in training follows the step "
                    "W_Q and W_K take in logit space, not the saturated start",
       .why = "Unscaled, a change of W_Q moves the logits sqrt(d_k) times further than under "
              "1/sqrt(d_k), and Adam's step does not shrink with the gradient: the logits run "
              "away and the softmax collapses onto one key (Zhai et al. 2023; Dehghani et al. "
              "2023; Wortsman et al. 2023). The control and none_reparam start from the same "
              "weights and differ only in W_Q and W_K's learning rate, so a difference between "
              "them is that rate's.",
       .section = kTraining},
  };
  return table;
}

const Claim& claim(const std::string& id, bool identity) {
  for (const Claim& c : claims())
    if (c.id == id && c.identity == identity) return c;
  fail("study claims: no ", identity ? "identity " : "claim ", "'", id,
       "' in the table (examples/study/claims.cpp)");
}

Verdict verdict_for(const std::string& id, bool identity) {
  const Claim& c = claim(id, identity);
  return {.id = c.id, .claim = c.statement, .why = c.why, .identity = c.identity};
}

}  // namespace gradflow::study
