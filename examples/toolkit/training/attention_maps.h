// Attention maps a reader can read: --attention-maps DIR in every training program. At the end
// of a run, one held-out example goes through the model with every attention layer's probe on
// (nn/attention.h), and each layer becomes one SVG: a panel per head, the example's tokens down
// the left (queries) and across the top (keys), the colour scale, and each head's entropy.
//
// Why: a loss curve says that a model learned, not how. A reversal shows as an anti-diagonal in
// the decoder's cross-attention, an induction head as attention from a query key to the value
// after its earlier copy; neither is visible without the tokens on the axes. The scaling study
// draws one head of one layer for its claims (examples/study); this is the program's view.
//
// A layer's file is named by its dotted name, the prefix of its parameters in state_dict():
// "encoder.layers.0.self_attn.svg", "decoder.layers.1.cross_attn.svg". Padding is left out:
// rows are the example's query positions, columns its key positions, both without padding.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "nn/attention.h"
#include "nn/module.h"

namespace gradflow::training {

// Adds --attention-maps DIR to `args`: a session flag (it says what to show, not what the run
// is, so a resumed run may add it). A directory that could not be made or written, or that
// holds a .svg that is not a regular file (a FIFO would hang the write), is a UsageError when
// the flag is parsed, before any training; it is made only when the maps are written.
void add_attention_maps_flag(cli::ArgParser& args, std::string* dir);

// One attention layer of a model and where it sits.
struct AttentionLayer {
  std::string name;  // its parameters' prefix: "decoder.layers.0.cross_attn"
  nn::MultiHeadAttention* layer = nullptr;
  int64_t index = 0;     // of its block within its stack
  bool decoder = false;  // in the decoder stack: its queries are at the decoder's positions
  bool cross = false;    // cross-attention: its keys are at the encoder's positions
};

// The attention layers of an EncoderDecoder, DecoderLM or EncoderClassifier (nn/models.h), in
// the order of their parameters. Throws Error for another kind of module.
std::vector<AttentionLayer> attention_layers(nn::Module& model);

// The example whose attention is drawn: what the program ran, its tokens as the program shows
// them, and how to run it.
struct AttentionExample {
  std::string title;  // "seq2seq reverse": what ran, the start of every figure's title
  // The tokens at the encoder's and the decoder's positions, padding left out; padding may
  // follow them in the batch, never precede them. An encoder-only model has no decoder tokens,
  // a decoder-only one no encoder tokens.
  std::vector<std::string> encoder_tokens{}, decoder_tokens{};
  // Runs the model on the example as the first row of its batch (a batch of one is best).
  std::function<void()> forward = nullptr;
};

// One figure: its file name in DIR and its SVG document, and what it draws: a panel per head,
// in the order of the document's cells (<rect class="cell">, head by head, row by row) and notes
// (<text class="note">), so a page can recolour the figure for another step (run_page.h).
struct AttentionMapFile {
  std::string name{}, svg{};
  std::vector<plot::Heatmap> panels{};
};

// Runs example.forward in eval mode without gradients, each layer's probe on (the model's mode
// and probes are restored after), and draws one figure per attention layer. Each head's panel
// says its entropy in nats averaged over the example's queries (hidden keys carry no weight, so
// they add nothing), beside the entropy of uniform attention over the keys each query sees.
// Throws Error when the tokens do not fit the layers' shapes, or when a key left out as
// padding is visible to a query drawn (so the map would hide weight).
std::vector<AttentionMapFile> attention_maps(nn::Module& model, const AttentionExample& example);

// attention_maps, each written atomically into `dir` (made if need be), then the line
// `attention maps: wrote "DIR"/{a.svg,b.svg}` on `out`. Throws UsageError when a file cannot be
// written.
void write_attention_maps(nn::Module& model, const AttentionExample& example,
                          const std::string& dir, std::ostream& out);

// A byte of text as a tick label: "␣" for a space, "↵" for a newline, "⇥" for a tab, itself
// for other printable ASCII, else its code ("\x07", "\xc3": a lone byte of a UTF-8 character
// is no character, and no valid XML either).
std::string visible_char(unsigned char c);

}  // namespace gradflow::training
