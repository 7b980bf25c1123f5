# Rebuild a gradflow model in PyTorch from docs/architecture.md only, run it
# on a batch gradflow also ran, and compare the two element-wise. A worked
# example for readers, and a test: ctest runs it on a small model of each
# kind and variant (the PyTorchRebuild.* tests, tests/CMakeLists.txt), when
# a python3 with torch is found.
#
# Usage: python3 rebuild_in_pytorch.py MODEL.safetensors BATCH.safetensors
# MODEL is a gradflow model.safetensors: an EncoderDecoder (seq2seq) or a
# DecoderLM (charlm), told apart by its parameter names; its options come
# from its metadata: positional learned|rope|alibi, head_dim, norm pre|post,
# norm_type layernorm|rmsnorm|dyt, ffn mlp|swiglu, activation gelu|relu, scale
# (the fixed ones, learned, log_n, ssmax, softcap[:<c>]); any other is
# refused by name. BATCH holds gradflow's float32 logits (B, T, V) and
#   for an EncoderDecoder: int64 src (B, S), tgt_in, tgt_out (B, T) and
#                          float32 src_pad (B, S), 1 at padding;
#   for a DecoderLM:       int64 ids, targets (B, T), -100 where not scored,
#                          and optionally float32 pad (B, T), 1 at padding;
# and optionally gradflow's float32 loss and smoothed_loss (), the mean
# cross-entropy without and with label smoothing 0.1.
# tests/nn/rebuild_batch_writer.cpp (built with the tests) writes such pairs
# for every case of tests/nn/rebuild_cases.txt:
#   build/bin/rebuild_batch_writer /tmp/rebuild
#   python3 docs/rebuild_in_pytorch.py /tmp/rebuild/decoder_lm.rope/{model,batch}.safetensors
# with a python3 that has torch (Debian's python3-torch is /usr/bin/python3's;
# a pyenv python3 earlier on PATH may have none).
#
# Prints the losses and the largest logit difference; exits with status 1
# and one line on stderr when they differ by more than TOLERANCE (below).
# Measured with PyTorch 1.13.1 on the writer's models (2 layers, C = 32,
# H = 4, trained 200 steps on reversal; 16 sequences of up to 9 or 18
# tokens), gradflow in Release on an AVX-512 machine (AMD EPYC): the largest
# |logit difference|, with the largest |logit| beside it.
#                   learned           rope              post-LN, relu, D = 12
#   EncoderDecoder  7.2e-6 of 11.3    5.7e-6 of 9.30    5.2e-6 of 9.41
#   DecoderLM       8.1e-6 of 13.2    8.8e-6 of 9.67    1.2e-5 of 9.71
#                   log_n             alibi             ssmax, rope
#   EncoderDecoder  4.8e-6 of 12.3    3.8e-6 of 9.51    4.3e-6 of 9.44
#   DecoderLM       1.3e-5 of 11.5    4.3e-6 of 7.65    3.5e-6 of 8.83
#                   rmsnorm           swiglu            post-LN, rmsnorm, swiglu
#   EncoderDecoder  4.8e-6 of 11.2    9.1e-6 of 11.3    7.6e-6 of 9.91
#   DecoderLM       7.0e-6 of 10.2    8.6e-6 of 10.9    1.0e-5 of 10.2
#                   softcap:2, alibi  dyt, softcap:30   post-LN, dyt
#   EncoderDecoder  3.3e-6 of 8.47    4.5e-6 of 11.0    1.9e-6 of 8.33
#   DecoderLM       5.7e-6 of 11.1    6.7e-6 of 13.0    1.4e-5 of 8.19
#   (the last three measured in the Release build on the 2-core AMD EPYC,
#   OpenBLAS 0.3.21, with Debian's PyTorch 1.13.0a0)
# The losses agree to 1.2e-7 or better (e.g. 0.0749564692 and 0.0749564767;
# alibi's DecoderLM, trained to 0.81, 0.808991492 both); on the last three
# cases to 2.4e-7 (post-LN DyT's EncoderDecoder, 1.54833591 and 1.54833567).
import json, math, struct, sys
import torch, torch.nn.functional as F

# The tolerance. float32 keeps 24 bits, 6e-8 of a value, and PyTorch and
# gradflow add the same products in different orders (BLAS blocking, fused
# kernels), so logits after a few layers of sums over C or F terms differ by
# about 1e-6 of their largest magnitude (above: at most 1.3e-5 at 11.5). A
# mistake moves them by much more, on the writer's trained models:
# 1/sqrt(D + 1) for 1/sqrt(D) by 0.28 to 0.76, RoPE's base 1000 for 10000 by
# 5.3, the tanh GELU for the exact one by 1.6e-3 to 5.4e-3; on the rmsnorm
# and swiglu cases, SwiGLU's fc1 and fc3 swapped by 8.5 to 11.3, GELU for its
# SiLU by 2.2 to 4.2, an RMSNorm that centres x by 2.5 to 5.1. 1e-4 of the
# largest |logit| (at least 1) leaves rounding about 100x room and catches
# all of them; the losses are held to the same bound. On the softcap and dyt
# cases: the cap written tanh(x c) / c moves them by 6.3 to 9.9, the cap
# after ALiBi's bias by 4.9 to 8.6, no cap at all by 8.7 to 14 at c = 2 and
# by 0.42 to 0.52 at c = 30, DyT without its alpha by 3.0 to 15. Not RMSNorm's eps 1e-5
# for 1e-6: 3e-5 to 1.8e-4, below it (docs/architecture.md states the eps).
TOLERANCE = 1e-4

def load(path):  # safetensors: u64 header length, JSON header, then the data
    raw = open(path, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n]); data = raw[8 + n:]; out = {}
    dt = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64}
    for k, v in header.items():
        if k == "__metadata__": continue
        b, e = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[b:e]), dtype=dt[v["dtype"]]).reshape(v["shape"])
    return out, header.get("__metadata__", {})
def fail(message): sys.exit(f"rebuild_in_pytorch: {message}")
if len(sys.argv) != 3: fail("usage: python3 rebuild_in_pytorch.py MODEL.safetensors BATCH.safetensors")
W, meta = load(sys.argv[1])
B, _ = load(sys.argv[2])
H = int(meta["config.heads"])
LAYERS = int(meta["config.layers"])
HEAD_DIM = int(meta.get("config.head_dim", "0"))  # 0: C / H
POSITIONAL = meta.get("config.positional", "learned")
ROPE, ALIBI = POSITIONAL == "rope", POSITIONAL == "alibi"
POST_LN = meta.get("config.norm", "pre") == "post"
NORM = meta.get("config.norm_type", "layernorm")  # absent: a checkpoint from before RMSNorm
FFN = meta.get("config.ffn", "mlp")  # absent: from before SwiGLU
ACT = F.relu if meta.get("config.activation") == "relu" else F.gelu
SCALE = meta.get("config.scale", "inv_sqrt_dk")
FIXED = {"inv_sqrt_dk": lambda d: d ** -0.5, "none": lambda d: 1.0, "inv_dk": lambda d: 1.0 / d,
         "inv_2sqrt_dk": lambda d: 0.5 * d ** -0.5}
if SCALE.startswith("const:"): FIXED[SCALE] = lambda d: float(SCALE[6:])
# softcap:<c>: the logits 1/sqrt(d) q.k become c tanh(logits / c); a bare softcap is c = 30.
CAP = float(SCALE.partition(":")[2] or 30) if SCALE.split(":")[0] == "softcap" else None
if CAP is not None: FIXED[SCALE] = FIXED["inv_sqrt_dk"]
# An allow-list: a mode or scheme this script does not know is refused by name.
if SCALE not in FIXED and SCALE not in ("learned", "log_n", "ssmax"):
    fail(f"scale {SCALE} is not rebuilt here (the fixed ones, learned, log_n, ssmax and softcap are)")
if POSITIONAL not in ("learned", "rope", "alibi"):
    fail(f"positional {POSITIONAL} is not rebuilt here (learned, rope and alibi are)")
if NORM not in ("layernorm", "rmsnorm", "dyt"): fail(f"norm_type {NORM} is not rebuilt here (layernorm, rmsnorm and dyt are)")
if FFN not in ("mlp", "swiglu"): fail(f"ffn {FFN} is not rebuilt here (mlp and swiglu are)")
ENCODER_DECODER = "encoder.layers.0.self_attn.q_proj.weight" in W  # else a DecoderLM: no encoder
if "lm_head.weight" not in W or "decoder.layers.0.self_attn.q_proj.weight" not in W:
    fail(f"{sys.argv[1]} is neither an EncoderDecoder nor a DecoderLM")
def lin(x, p): return x @ W[p + ".weight"].T + W[p + ".bias"]
def ln(x, p):  # LayerNorm (eps 1e-5), RMSNorm (eps 1e-6, no bias) written out (torch 1.13 has no nn.RMSNorm), or DyT
    if NORM == "layernorm": return F.layer_norm(x, x.shape[-1:], W[p + ".weight"], W[p + ".bias"], 1e-5)
    if NORM == "dyt": return W[p + ".weight"] * torch.tanh(W[p + ".alpha"] * x) + W[p + ".bias"]
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * W[p + ".weight"]
def rope(x):  # x (B, H, T, D): pair (2i, 2i+1) at position p turns by p * 10000^(-2i/D)
    t, d = x.shape[-2], x.shape[-1]
    angle = torch.arange(t, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), -1).flatten(-2)
def alibi(t, s):  # (H, T, S): -m_h |i - j|, slopes m_h = 2^(-8 (h + 1) / H)
    slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, dtype=torch.float64) / H)
    distance = (torch.arange(t)[:, None] - torch.arange(s)[None, :]).abs().to(torch.float64)
    return (-slopes[:, None, None] * distance).to(torch.float32)
def scaled(q, p, mask, s):  # q (B, H, T, D) times the scale mode's factor
    d = q.shape[-1]
    if SCALE in FIXED: return q * FIXED[SCALE](d)
    if SCALE == "learned": return q * W[p + ".learned.scale"]
    # n: the keys each query sees, S less those the mask hides, at least 1.
    n = torch.tensor(float(s)) if mask is None else (~mask).sum(-1, keepdim=True).clamp(min=1)
    log_n = n.to(q.dtype).log()  # broadcasts to (B, H, T, 1)
    if SCALE == "log_n": return q * log_n / math.sqrt(d)
    return q * W[p + ".ssmax.s"].view(1, H, 1, 1) * log_n  # ssmax: s per head
def attn(x, mem, p, mask, positions):  # mask True = hidden; every row must see a key (else NaN here, 0 in gradflow)
    b, t, c = x.shape; s = mem.shape[1]; d = HEAD_DIM or c // H
    q = lin(x, p + ".q_proj").view(b, t, H, d).transpose(1, 2)
    k = lin(mem, p + ".k_proj").view(b, s, H, d).transpose(1, 2)
    v = lin(mem, p + ".v_proj").view(b, s, H, d).transpose(1, 2)
    q = scaled(q, p, mask, s)
    if positions and ROPE: q, k = rope(q), rope(k)
    logits = q @ k.transpose(-2, -1)
    if CAP is not None: logits = CAP * torch.tanh(logits / CAP)  # the scale mode's variant comes before ALiBi's
    if positions and ALIBI: logits = logits + alibi(t, s)
    if mask is not None: logits = logits.masked_fill(mask, float("-inf"))
    y = logits.softmax(-1) @ v
    return lin(y.transpose(1, 2).reshape(b, t, H * d), p + ".o_proj")
def ff(x, p):  # the MLP fc2(act(fc1 x)), or SwiGLU fc2(silu(fc1 x) * fc3 x)
    if FFN == "swiglu": return lin(F.silu(lin(x, p + ".fc1")) * lin(x, p + ".fc3"), p + ".fc2")
    return lin(ACT(lin(x, p + ".fc1")), p + ".fc2")
def sub(x, norm, f): return ln(x + f(x), norm) if POST_LN else x + f(ln(x, norm))  # one residual sublayer
def embed(ids): return W["embed.token.weight"][ids] + (W["embed.position.weight"][: ids.shape[1]] if POSITIONAL == "learned" else 0)
def causal(t): return torch.ones(t, t, dtype=torch.bool).triu(1)  # query i hides keys j > i
def encoder(x, mask):
    for i in range(LAYERS):
        p = f"encoder.layers.{i}"
        x = sub(x, p + ".self_attn_norm", lambda h: attn(h, h, p + ".self_attn", mask, True))
        x = sub(x, p + ".ff_norm", lambda h: ff(h, p + ".ff"))
    return x
def decoder(y, mask, mem=None, mem_mask=None):  # with mem, each layer cross-attends to it
    for i in range(LAYERS):
        p = f"decoder.layers.{i}"
        y = sub(y, p + ".self_attn_norm", lambda h: attn(h, h, p + ".self_attn", mask, True))
        if mem is not None:  # no positions across sequences
            y = sub(y, p + ".cross_attn_norm", lambda h: attn(h, mem, p + ".cross_attn", mem_mask, False))
        y = sub(y, p + ".ff_norm", lambda h: ff(h, p + ".ff"))
    return y
if ENCODER_DECODER:
    src, tgt_in = B["src"], B["tgt_in"]
    key_mask = B["src_pad"].bool()[:, None, None, :]  # (B, 1, 1, S): padded source keys hidden
    mem = encoder(embed(src), key_mask)
    y = decoder(embed(tgt_in), causal(tgt_in.shape[1]), mem, key_mask)
    targets, ignore = B["tgt_out"], 0  # PAD = 0 carries no loss
else:
    ids = B["ids"]; mask = causal(ids.shape[1])
    if "pad" in B: mask = mask | B["pad"].bool()[:, None, None, :]  # (B, 1, T, T)
    y = decoder(embed(ids), mask)
    targets, ignore = B["targets"], -100
logits = lin(ln(y, "final_norm"), "lm_head")
V = logits.shape[-1]
def cross_entropy(eps): return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=ignore, label_smoothing=eps)
loss, smoothed = cross_entropy(0.0), cross_entropy(0.1)

def check(what, ours, theirs):  # -> largest |difference| and the scale, or exit 1 naming it
    if ours.shape != theirs.shape: fail(f"{what}: shape {tuple(ours.shape)}, gradflow's {tuple(theirs.shape)}")
    diff, scale = (ours - theirs).abs().max().item(), max(1.0, theirs.abs().max().item())
    if not diff <= TOLERANCE * scale:  # also catches NaN
        fail(f"{what}: PyTorch's and gradflow's differ by up to {diff:.3g}, above {TOLERANCE:g} x {scale:.3g} ({sys.argv[1]})")
    return diff, scale
kind = "EncoderDecoder" if ENCODER_DECODER else "DecoderLM"
options = f"{POSITIONAL}, {'post' if POST_LN else 'pre'}-LN, {NORM}, {FFN if FFN != 'mlp' else ACT.__name__}, head_dim {HEAD_DIM or 'C/H'}, scale {SCALE}"
diff, scale = check("logits", logits, B["logits"])
for name, ours in (("loss", loss), ("smoothed_loss", smoothed)):  # gradflow's, if the batch has them
    if name in B: check(name, ours, B[name])
print(f"{kind} ({options})")
for name, ours in (("loss", loss), ("smoothed_loss", smoothed)):
    print(f"  {name:14} pytorch {ours.item():.9g}" + (f", gradflow {B[name].item():.9g}" if name in B else ""))
print(f"  largest |logit difference| {diff:.2g} (max |logit| {scale:.3g}, tolerance {TOLERANCE * scale:.2g})")
