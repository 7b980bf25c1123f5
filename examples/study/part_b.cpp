// Part B: small transformers trained under each scale mode. For a task and
// d_k, every mode starts from the same seed and sees the same batches, so
// the curves differ only by the scale. d_k is varied at a fixed model width
// (d_model 64, one head whose size d_k is set independently: the Q, K, V
// projections map 64 -> d_k), so the residual stream and the feed-forward
// layers are the same for every d_k.
//
// Tasks: "reverse", an encoder-decoder must output its input backwards (each
// output position must attend to exactly one input position); and
// "decoder_copy", a decoder-only model reads x SEP (x of a fixed length L)
// and must continue with x again: each position must find its twin L + 1
// tokens back. (With variable L one layer cannot tell how far back that is;
// it takes an induction circuit of two layers.)
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "autograd/ops.h"
#include "examples/study/metrics.h"
#include "examples/study/study.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim.h"
#include "nn/toy_tasks.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"

namespace gradflow::study {

namespace {

constexpr int64_t kSymbols = 8, kMinLen = 2, kMaxLen = 8;

struct Batch {
  Tensor src, src_pad, input, target;  // src, src_pad only for reverse
};

nn::ToyTaskConfig reverse_task() {
  return {.task = "reverse",
          .n_symbols = kSymbols,
          .min_len = kMinLen,
          .max_len = kMaxLen,
          .max_digits = 3};
}

// x SEP x EOS, shifted for next-token prediction; the first half (and the
// padding) is not scored. Shape: input, target (B, 2 L_max + 1).
Batch decoder_copy_batch(int64_t b, Generator& gen) {
  const int64_t t = 2 * kMaxLen + 1;
  std::vector<int64_t> input(b * t, nn::kPadToken), target(b * t, nn::kPadToken);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t len = kMaxLen;
    std::vector<int64_t> x(len);
    for (int64_t& v : x) v = nn::kFirstContentToken + gen.below(kSymbols);
    std::vector<int64_t> seq = x;
    seq.push_back(nn::kBosToken);  // the separator
    seq.insert(seq.end(), x.begin(), x.end());
    seq.push_back(nn::kEosToken);
    for (size_t p = 0; p + 1 < seq.size(); ++p) {
      input[i * t + p] = seq[p];
      if (static_cast<int64_t>(p) >= len) target[i * t + p] = seq[p + 1];
    }
  }
  return {Tensor(), Tensor(), from_indices(input, {b, t}), from_indices(target, {b, t})};
}

Batch make_study_batch(const std::string& task, int64_t b, Generator& gen) {
  if (task == "decoder_copy") return decoder_copy_batch(b, gen);
  nn::Seq2SeqBatch s = nn::make_batch(reverse_task(), b, gen);
  return {s.src, s.src_pad, s.tgt_in, s.tgt_out};
}

struct RunSpec {
  std::string task, mode;
  int64_t d_k;
  double lr;
  bool record;
};

struct RunOutput {
  std::vector<TrainRow> rows;
  std::vector<LayerRow> layers;
  FinalRow final;
};

// One model of either kind, with its attention layers named for the logs.
struct StudyModel {
  std::unique_ptr<nn::Module> owner;
  nn::EncoderDecoder* seq2seq = nullptr;
  nn::DecoderLM* lm = nullptr;
  std::vector<std::pair<std::string, nn::MultiHeadAttention*>> attention;

  Variable forward(const Batch& b) const {
    return seq2seq ? seq2seq->forward(b.src, b.input, b.src_pad) : lm->forward(b.input);
  }
};

StudyModel build(const RunSpec& spec, const PartBOptions& o, Generator& gen) {
  nn::ModelConfig c;
  c.d_model = o.d_model, c.heads = o.heads, c.layers = o.layers, c.d_ff = o.d_ff;
  c.head_dim = spec.d_k;
  c.scale = nn::ScaleMode::parse(spec.mode);
  StudyModel m;
  if (spec.task == "reverse") {
    c.vocab = nn::vocab_size(reverse_task());
    c.max_len = std::max(nn::src_len(reverse_task()), nn::tgt_len(reverse_task()));
    auto model = std::make_unique<nn::EncoderDecoder>(c, gen);
    m.seq2seq = model.get();
    for (size_t i = 0; i < model->encoder->layers.size(); ++i)
      m.attention.emplace_back("enc" + std::to_string(i) + ".self",
                               model->encoder->layers[i]->self_attn.get());
    for (size_t i = 0; i < model->decoder->layers.size(); ++i) {
      m.attention.emplace_back("dec" + std::to_string(i) + ".self",
                               model->decoder->layers[i]->self_attn.get());
      m.attention.emplace_back("dec" + std::to_string(i) + ".cross",
                               model->decoder->layers[i]->cross_attn.get());
    }
    m.owner = std::move(model);
  } else {
    c.vocab = nn::kFirstContentToken + kSymbols;
    c.max_len = 2 * kMaxLen + 1;
    auto model = std::make_unique<nn::DecoderLM>(c, gen);
    m.lm = model.get();
    for (size_t i = 0; i < model->decoder->layers.size(); ++i)
      m.attention.emplace_back("dec" + std::to_string(i) + ".self",
                               model->decoder->layers[i]->self_attn.get());
    m.owner = std::move(model);
  }
  for (auto& [name, a] : m.attention) a->record_probe = true;
  return m;
}

double frobenius(const Variable& w) {
  return w.grad().defined() ? std::sqrt(sum(mul(w.grad(), w.grad())).item()) : 0.0;
}

// Teacher-forced token accuracy over the scored positions.
double token_accuracy(const Variable& logits, const Tensor& target) {
  Tensor predicted = max(logits.data(), -1).indices;
  std::vector<double> p = predicted.to_vector(), t = target.to_vector();
  int64_t right = 0, total = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == nn::kPadToken) continue;
    right += p[i] == t[i];
    ++total;
  }
  return total ? static_cast<double>(right) / static_cast<double>(total) : 0.0;
}

// Greedy decoding accuracy on the reverse task: (token, whole sequence).
std::pair<double, double> greedy_accuracy(const nn::EncoderDecoder& m,
                                          const std::vector<Batch>& eval) {
  int64_t right = 0, total = 0, seq_right = 0, seqs = 0;
  for (const Batch& b : eval) {
    Tensor out =
        m.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, b.target.shape()[1]);
    for (int64_t i = 0; i < b.target.shape()[0]; ++i) {
      bool all = true;
      for (int64_t t = 0; t < b.target.shape()[1]; ++t) {
        double want = b.target.at({i, t});
        if (want == nn::kPadToken) break;
        bool ok = t < out.shape()[1] && out.at({i, t}) == want;
        right += ok;
        all = all && ok;
        ++total;
      }
      seq_right += all;
      ++seqs;
    }
  }
  return {static_cast<double>(right) / static_cast<double>(total),
          static_cast<double>(seq_right) / static_cast<double>(seqs)};
}

RunOutput train_run(const RunSpec& spec, const PartBOptions& o) {
  // Same seeds for every mode and lr of a (task, d_k): same init, same data.
  const uint64_t base =
      o.seed * 7919 + static_cast<uint64_t>(spec.d_k) * 31 + (spec.task == "reverse" ? 1 : 2);
  Generator init(base), data(base + 100), eval_gen(base + 200);
  StudyModel model = build(spec, o, init);
  std::vector<Batch> eval = {make_study_batch(spec.task, 128, eval_gen),
                             make_study_batch(spec.task, 128, eval_gen)};
  nn::AdamW opt(model.owner->parameters(), spec.lr, 0.9, 0.98, 1e-9, 0.0);
  const int64_t warmup = std::max<int64_t>(1, o.steps / 20);
  RunOutput out;
  out.final = {spec.mode, spec.task, spec.d_k, spec.lr, 0, 0, 0, 0, false};
  double loss_value = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    opt.set_lr(spec.lr *
               std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(warmup)));
    Batch b = make_study_batch(spec.task, o.batch, data);
    Variable loss = nn::cross_entropy(model.forward(b), b.target, nn::kPadToken);
    loss_value = loss.item();
    if (step == 0) out.final.initial_loss = loss_value;
    if (!std::isfinite(loss_value)) {
      out.final.diverged = true;
      break;
    }
    opt.zero_grad();
    loss.backward();
    const bool log = spec.record && (step % o.log_every == 0 || step + 1 == o.steps);
    if (log) {
      TrainRow row{spec.mode, spec.task, spec.d_k, step, opt.lr(), loss_value};
      double q2 = 0, k2 = 0, v2 = 0, entropy = 0;
      for (auto& [name, a] : model.attention) {
        LayerRow lr{spec.mode, spec.task, name, spec.d_k, step};
        lr.grad_norm_wq = frobenius(a->q_proj->weight);
        lr.grad_norm_wk = frobenius(a->k_proj->weight);
        lr.grad_norm_wv = frobenius(a->v_proj->weight);
        AttentionStats st =
            attention_stats(a->probe.weights.data(), a->probe.logits.data(), a->probe.mask);
        lr.entropy_norm = st.entropy_norm;
        lr.max_logit = st.max_logit;
        q2 += lr.grad_norm_wq * lr.grad_norm_wq;
        k2 += lr.grad_norm_wk * lr.grad_norm_wk;
        v2 += lr.grad_norm_wv * lr.grad_norm_wv;
        entropy += st.entropy_norm;
        row.max_logit = std::max(row.max_logit, st.max_logit);
        out.layers.push_back(lr);
      }
      row.grad_norm_wq = std::sqrt(q2);
      row.grad_norm_wk = std::sqrt(k2);
      row.grad_norm_wv = std::sqrt(v2);
      row.entropy_norm = entropy / static_cast<double>(model.attention.size());
      NoGradGuard no_grad;
      double acc = 0;
      for (const Batch& e : eval) acc += token_accuracy(model.forward(e), e.target);
      row.accuracy = acc / static_cast<double>(eval.size());
      out.rows.push_back(row);
    }
    nn::clip_grad_norm(opt.params(), 1.0);
    opt.step();
  }
  NoGradGuard no_grad;
  double eval_loss = 0, acc = 0;
  for (const Batch& e : eval) {
    Variable logits = model.forward(e);
    eval_loss += nn::cross_entropy(logits, e.target, nn::kPadToken).item();
    acc += token_accuracy(logits, e.target);
  }
  out.final.final_loss = out.final.diverged ? NAN : eval_loss / static_cast<double>(eval.size());
  out.final.final_accuracy = acc / static_cast<double>(eval.size());
  if (model.seq2seq && !out.final.diverged) {
    auto [token, seq] = greedy_accuracy(*model.seq2seq, eval);
    out.final.final_accuracy = token;
    out.final.seq_accuracy = seq;
  }
  return out;
}

}  // namespace

PartBResult run_part_b(const PartBOptions& o, const std::vector<double>& lrs, bool record_curves,
                       const std::function<void(size_t, size_t)>& on_run_done) {
  std::vector<RunSpec> specs;
  for (const std::string& task : o.tasks)
    for (int64_t d_k : o.d_ks)
      for (const std::string& mode : study_modes())
        for (double lr : lrs) specs.push_back({task, mode, d_k, lr, record_curves});
  std::vector<RunOutput> outputs(specs.size());
  // Runs are independent: train them side by side, one per thread (each
  // GEMM then single-threaded), and keep the results in spec order so the
  // output does not depend on the thread count.
  std::atomic<size_t> next{0};
  std::mutex lock;
  std::string error;
  size_t done = 0;
  const bool flush = flush_denormals();  // the runs take the caller's mode
  auto worker = [&] {
    set_flush_denormals(flush);
    for (size_t i; (i = next++) < specs.size();) {
      try {
        outputs[i] = train_run(specs[i], o);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> guard(lock);
        error = e.what();
      }
      std::lock_guard<std::mutex> guard(lock);
      if (on_run_done) on_run_done(++done, specs.size());
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, o.threads); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (!error.empty()) throw Error("scaling_study: a training run failed: " + error);
  PartBResult result;
  for (RunOutput& r : outputs) {
    result.rows.insert(result.rows.end(), r.rows.begin(), r.rows.end());
    result.layers.insert(result.layers.end(), r.layers.begin(), r.layers.end());
    result.finals.push_back(r.final);
  }
  return result;
}

}  // namespace gradflow::study
