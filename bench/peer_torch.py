#!/usr/bin/env python3
"""The PyTorch side of the training-step benchmark (bench/WORKLOADS.md).

It builds the same transformer as bench/train_bench.cpp, with the same
parameter count, and times the same step: zero_grad, forward, cross-entropy,
backward, AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01), on
fixed random int64 token batches src, tgt and y of shape (batch, seq), in
float32 on the CPU, in plain eager PyTorch. After --warmup untimed steps it
times --steps steps and prints one line:

    workload=gpt-small params=3241568 steps_per_s=F tokens_per_s=F peak_rss_mb=F

The best thread setup on a 2-core machine is PyTorch on one thread with
OpenBLAS on two:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=2 python3 bench/peer_torch.py gpt-small --threads 1

WORKLOAD is gpt-small (the default), seq2seq-tiny, study-reverse or
study-recall; --kind encdec|decoder|encoder and --d-model --heads --layers
--d-ff --seq --batch --vocab --head-dim override single fields, as in
train_bench. The study workloads are the scaling study's Part B models
(examples/study): d_model 32, one head of size d_k (head_dim: 16 for
reverse, 256 for recall), batches of 64 drawn once from the study's tasks
as nn/data makes them (reverse: 2 to 8 of 8 symbols, padded to 9, the
source's padding hidden from attention; recall: 5 of 32 keys, 5 queries,
T = 20), PAD targets ignored by the loss, AdamW with betas 0.9/0.98, eps
1e-9, no weight decay, lr 3e-3, and the gradients clipped to norm 1. PyTorch here is Debian's python3-torch
(apt-get install -y python3-torch), which lives under /usr/bin/python3.
A bad flag or shape (e.g. --heads 3 with d_model 256) gives one line on
stderr and exit code 2.
"""

import argparse
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The two rows of WORKLOADS.md. layers is the depth of each stack (an
# encoder-decoder has `layers` encoder blocks and `layers` decoder blocks).
WORKLOADS = {
    "seq2seq-tiny": dict(kind="encdec", d_model=64, heads=4, layers=2, d_ff=256,
                         seq=16, batch=64, vocab=16),
    "gpt-small": dict(kind="decoder", d_model=256, heads=8, layers=4, d_ff=1024,
                      seq=128, batch=16, vocab=96),
    # The study's Part B at its cheapest and its dearest run (bench/workloads.cpp).
    "study-reverse": dict(kind="encdec", d_model=32, heads=1, layers=1, d_ff=64,
                          seq=9, batch=64, vocab=11, head_dim=16, task="reverse"),
    "study-recall": dict(kind="decoder", d_model=32, heads=1, layers=2, d_ff=64,
                         seq=20, batch=64, vocab=67, head_dim=256, task="recall"),
}
PAD = 0
FIELDS = ("d_model", "heads", "layers", "d_ff", "seq", "batch", "vocab", "head_dim")


class Attention(nn.Module):
    """Multi-head attention: separate Q, K, V, O projections with biases
    (d_model -> heads x d_k and back), scores scaled by 1/sqrt(d_k), an
    optional causal mask and key padding, softmax over keys."""

    def __init__(self, d_model, heads, causal, max_len, head_dim=0):
        super().__init__()
        self.heads, self.d_k = heads, head_dim or d_model // heads
        width = heads * self.d_k
        self.q_proj = nn.Linear(d_model, width)
        self.k_proj = nn.Linear(d_model, width)
        self.v_proj = nn.Linear(d_model, width)
        self.o_proj = nn.Linear(width, d_model)
        # True above the diagonal: the keys a query may not see.
        mask = torch.ones(max_len, max_len, dtype=torch.bool).triu(1) if causal else None
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x, memory, key_pad=None):
        # x (B, T, C) gives the queries, memory (B, S, C) the keys and values;
        # key_pad (B, 1, 1, S) True at padded keys, or None.
        b, t, c = x.shape
        s = memory.shape[1]
        q = self.q_proj(x).view(b, t, self.heads, self.d_k).transpose(1, 2)
        k = self.k_proj(memory).view(b, s, self.heads, self.d_k).transpose(1, 2)
        v = self.v_proj(memory).view(b, s, self.heads, self.d_k).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d_k))  # (B, H, T, S)
        if self.mask is not None:
            scores = scores.masked_fill(self.mask[:t, :s], float("-inf"))
        if key_pad is not None:
            scores = scores.masked_fill(key_pad, float("-inf"))
        y = scores.softmax(-1) @ v  # (B, H, T, d_k)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.heads * self.d_k))


class FeedForward(nn.Module):
    """fc2(GELU(fc1(x))), GELU in its exact erf form."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    """A pre-LN block, as gradflow's EncoderLayer and DecoderLayer:
        x = x + SelfAttn(LN(x))
        x = x + CrossAttn(LN(x), memory)    (decoder of an encoder-decoder only;
                                             the memory is not normalised)
        x = x + FF(LN(x))"""

    def __init__(self, c, causal, cross):
        super().__init__()
        d = c["d_model"]
        self.self_attn_norm = nn.LayerNorm(d, eps=1e-5)
        self.self_attn = Attention(d, c["heads"], causal, c["seq"], c["head_dim"])
        self.cross_attn_norm = nn.LayerNorm(d, eps=1e-5) if cross else None
        self.cross_attn = (Attention(d, c["heads"], False, c["seq"], c["head_dim"])
                           if cross else None)
        self.ff_norm = nn.LayerNorm(d, eps=1e-5)
        self.ff = FeedForward(d, c["d_ff"])

    def forward(self, x, memory=None, self_pad=None, memory_pad=None):
        h = self.self_attn_norm(x)
        x = x + self.self_attn(h, h, self_pad)
        if self.cross_attn is not None:
            x = x + self.cross_attn(self.cross_attn_norm(x), memory, memory_pad)
        return x + self.ff(self.ff_norm(x))


class Model(nn.Module):
    """gradflow's EncoderDecoder (kind encdec), DecoderLM (decoder) or
    EncoderClassifier with classes = 0 (encoder): one token table shared by
    source and target plus a learned position table of seq rows, the stacks,
    a final LayerNorm and an untied Linear to the vocabulary."""

    def __init__(self, c):
        super().__init__()
        self.kind = c["kind"]
        d, layers = c["d_model"], c["layers"]
        self.token = nn.Embedding(c["vocab"], d)
        self.position = nn.Embedding(c["seq"], d)
        self.encoder = None
        self.decoder = None
        if self.kind in ("encdec", "encoder"):
            self.encoder = nn.ModuleList(
                Block(c, causal=False, cross=False) for _ in range(layers))
        if self.kind in ("encdec", "decoder"):
            self.decoder = nn.ModuleList(
                Block(c, causal=True, cross=self.kind == "encdec") for _ in range(layers))
        self.final_norm = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, c["vocab"])

    def embed(self, ids):
        return self.token(ids) + self.position.weight[: ids.shape[1]]

    def forward(self, src, tgt, src_pad=None):
        # As train_bench calls its models: the encoder-decoder reads both
        # batches, the decoder-only model tgt, the encoder src. src_pad
        # (B, S) True at the source's padding, or None.
        memory = None
        key_pad = None if src_pad is None else src_pad[:, None, None, :]
        if self.encoder is not None:
            memory = self.embed(src)
            for block in self.encoder:
                memory = block(memory, self_pad=key_pad)
        if self.decoder is None:
            x = memory
        else:
            x = self.embed(tgt)
            for block in self.decoder:
                x = block(x, memory, memory_pad=key_pad)
        return self.head(self.final_norm(x))  # (B, T, V)


def reverse_batch(b, gen):
    """The study's reverse task as nn/data/toy_tasks.h makes it: L in [2, 8]
    symbols of 8 (ids 3..10), src = c EOS PAD.., tgt_in = BOS rev(c) PAD..,
    y = rev(c) EOS PAD..; S = T = 9. Returns src, src_pad (True at PAD), tgt, y."""
    bos, eos, length = 1, 2, 9
    src = torch.full((b, length), PAD)
    tgt = torch.full((b, length), PAD)
    y = torch.full((b, length), PAD)
    for i in range(b):
        n = int(torch.randint(2, 9, (1,), generator=gen))
        c = torch.randint(0, 8, (n,), generator=gen) + 3
        r = c.flip(0)
        src[i, :n], src[i, n] = c, eos
        tgt[i, 0], tgt[i, 1:n + 1] = bos, r
        y[i, :n], y[i, n] = r, eos
    return src, src == PAD, tgt, y


def recall_batch(b, gen, n_keys=32, n_values=32, pairs=5, queries=5):
    """The study's recall task as nn/data/recall_task.h makes it: k v pairs,
    SEP, then queries with their answers; the model reads all but the last
    token and only the answers are targets. T = 2 pairs + 2 queries = 20."""
    sep = 1
    rows, targets = [], []
    for _ in range(b):
        keys = torch.randperm(n_keys, generator=gen)[:pairs]
        values = torch.randint(0, n_values, (pairs,), generator=gen)
        seq = []
        for k, v in zip(keys.tolist(), values.tolist()):
            seq += [3 + k, 3 + n_keys + v]
        seq.append(sep)
        answer_at = []
        for j in torch.randperm(pairs, generator=gen)[:queries].tolist():
            seq += [3 + keys[j].item(), 3 + n_keys + values[j].item()]
            answer_at.append(len(seq) - 1)
        target = [PAD] * (len(seq) - 1)
        for at in answer_at:
            target[at - 1] = seq[at]
        rows.append(seq[:-1])
        targets.append(target)
    return None, None, torch.tensor(rows), torch.tensor(targets)


class Parser(argparse.ArgumentParser):
    """Reports a bad flag or shape in one line on stderr, exit code 2, as
    train_bench does."""

    def error(self, message):
        print(f"peer_torch.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args():
    ap = Parser(
        description="Time training steps (forward, cross-entropy, backward, AdamW) of a "
                    "bench/WORKLOADS.md transformer in PyTorch and print one line of results. "
                    "--kind and the shape options override the workload's fields.")
    ap.add_argument("workload", nargs="?", default="gpt-small", choices=sorted(WORKLOADS),
                    metavar="WORKLOAD",
                    help="seq2seq-tiny, gpt-small (default), study-reverse or study-recall")
    ap.add_argument("--kind", choices=("encdec", "decoder", "encoder"), help="model kind")
    for field, text in zip(FIELDS, ("model width C", "attention heads", "blocks per stack",
                                    "feed-forward width", "sequence length T, of source and "
                                    "target alike", "sequences per batch B", "vocabulary size V",
                                    "d_k of every head (0: d_model / heads)")):
        ap.add_argument("--" + field.replace("_", "-"), dest=field, type=int, metavar="INT",
                        help=text)
    ap.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights and the batches")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (default 1; set OMP_NUM_THREADS to match)")
    a = ap.parse_args()

    c = dict(WORKLOADS[a.workload])
    c.setdefault("head_dim", 0)
    c.setdefault("task", "")
    if c["task"]:
        for fixed in ("kind", "seq", "vocab"):
            if getattr(a, fixed) is not None:
                ap.error(f"--{fixed} is set by {a.workload}'s task")
    if a.kind is not None:
        c["kind"] = a.kind
    for field in FIELDS:
        if getattr(a, field) is not None:
            c[field] = getattr(a, field)
    for name, value, low in [(f, c[f], 1) for f in FIELDS if f not in ("vocab", "head_dim")] + [
            ("vocab", c["vocab"], 2), ("head_dim", c["head_dim"], 0), ("steps", a.steps, 1), ("warmup", a.warmup, 0),
            ("threads", a.threads, 1)]:
        if value < low:
            ap.error(f"--{name.replace('_', '-')} must be at least {low}, got {value}")
    if c["head_dim"] == 0 and c["d_model"] % c["heads"] != 0:
        ap.error(f"d_model {c['d_model']} is not divisible by heads {c['heads']}")
    return a, c


def main():
    a, c = parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = Model(c)
    b, t, v = c["batch"], c["seq"], c["vocab"]
    study = bool(c["task"])
    if study:  # the study's optimiser, loss and clipping (examples/study/training_run.cpp)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9,
                                weight_decay=0.0)
        gen = torch.Generator().manual_seed(a.seed)
        make = reverse_batch if c["task"] == "reverse" else recall_batch
        src, src_pad, tgt, y = make(b, gen)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01)
        src = torch.randint(0, v, (b, t))
        tgt = torch.randint(0, v, (b, t))
        y = torch.randint(0, v, (b, t))
        src_pad = None
    ignore = PAD if study else -100

    def step():
        # zero_grad first, as train_bench does: the last step's gradients are
        # then not held through this step's forward.
        opt.zero_grad(set_to_none=True)
        logits = model(src, tgt, src_pad)
        loss = F.cross_entropy(logits.reshape(-1, v), y.reshape(-1), ignore_index=ignore)
        loss.backward()
        if study:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    seconds = time.perf_counter() - start
    if not math.isfinite(loss):
        sys.exit(f"peer_torch: the loss is {loss}")

    params = sum(p.numel() for p in model.parameters())
    steps_per_s = a.steps / seconds
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"workload={a.workload} params={params} steps_per_s={steps_per_s:.2f} "
          f"tokens_per_s={steps_per_s * b * t:.0f} peak_rss_mb={peak_rss_mb:.0f}")


if __name__ == "__main__":
    main()
