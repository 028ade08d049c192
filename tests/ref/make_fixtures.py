#!/usr/bin/python3
"""PyTorch reference for the C engine (run with Debian's /usr/bin/python3, torch 1.13).

Writes tests/fixtures/ref_<name>.bin for a tiny Llama-shaped and a tiny Qwen2-shaped model:
random base weights, two LoRA adapters (a1 trained, a2 frozen reference), one critic head,
a packed batch of 3 sequences of different lengths, and
  loss = mean_masked(-log p_a1(target)) + beta * mean_masked(KL(p_a1 || p_a2))
         + 0.5 * mean_k (head(h_a1[pos_k]) - y_k)^2
with the logits of a1, the loss, every trained gradient (a1's LoRA factors and the head) and the
losses of 10 AdamW steps (lr 1e-2, wd 0.01, grad-norm clip 1.0).

File format: repeated records  u32 name_len, name bytes, u32 ndim, u32 dims[ndim],
f32 data[prod(dims)] (little-endian). Names follow the C engine (GGUF-style base names,
"a1.<base>.lora_a", "head.W1", ...). Integer inputs are stored as f32.
"""
import math
import os
import struct
import sys

import torch

torch.set_num_threads(1)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")

TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]
TNAME = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
         "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}

CONFIGS = {
    # must equal the C presets "test-llama" / "test-qwen2" (src/model/config.c)
    "llama": dict(vocab=64, dim=32, layers=2, heads=4, kv_heads=2, ffn=48, eps=1e-5, theta=10000.0,
                  layout="adjacent", scaling=(8.0, 1.0, 4.0, 64), qkv_bias=False, tied=False,
                  a1=dict(rank=4, alpha=16.0, targets=["q", "v"]),
                  a2=dict(rank=2, alpha=2.0, targets=TARGETS)),
    "qwen2": dict(vocab=64, dim=32, layers=2, heads=4, kv_heads=1, ffn=40, eps=1e-6, theta=1e6,
                  layout="half", scaling=None, qkv_bias=True, tied=True,
                  a1=dict(rank=4, alpha=8.0, targets=TARGETS),
                  a2=dict(rank=2, alpha=4.0, targets=["q", "v"])),
}
SEQ_LENS = [9, 4, 6]
BETA = 0.1


def rope_freqs(cfg):
    hd = cfg["dim"] // cfg["heads"]
    inv = 1.0 / (cfg["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    if cfg["scaling"]:
        factor, low, high, orig = cfg["scaling"]
        lo_wl, hi_wl = orig / low, orig / high
        out = []
        for f in inv.tolist():
            wl = 2 * math.pi / f
            if wl < hi_wl:
                out.append(f)
            elif wl > lo_wl:
                out.append(f / factor)
            else:
                s = (orig / wl - low) / (high - low)
                out.append((1 - s) * f / factor + s * f)
        inv = torch.tensor(out, dtype=torch.float32)
    return inv


def rope(x, pos, inv, layout):
    # x [T, nh, hd]
    ang = pos[:, None].float() * inv[None, :]          # [T, hd/2]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    if layout == "adjacent":
        x0, x1 = x[..., 0::2], x[..., 1::2]
        y0, y1 = x0 * c - x1 * s, x0 * s + x1 * c
        return torch.stack([y0, y1], dim=-1).flatten(-2)
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat([x0 * c - x1 * s, x1 * c + x0 * s], dim=-1)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


class Model:
    def __init__(self, cfg, gen):
        self.cfg = cfg
        d, f, L = cfg["dim"], cfg["ffn"], cfg["layers"]
        hd = d // cfg["heads"]
        qd, kd = cfg["heads"] * hd, cfg["kv_heads"] * hd
        self.hd = hd
        W = {}

        def rnd(*shape, std=0.2):
            return (torch.randn(*shape, generator=gen) * std).float()
        W["token_embd.weight"] = rnd(cfg["vocab"], d)
        for l in range(L):
            p = f"blk.{l}."
            W[p + "attn_norm.weight"] = 1 + rnd(d, std=0.1)
            W[p + "attn_q.weight"] = rnd(qd, d)
            W[p + "attn_k.weight"] = rnd(kd, d)
            W[p + "attn_v.weight"] = rnd(kd, d)
            if cfg["qkv_bias"]:
                W[p + "attn_q.bias"] = rnd(qd, std=0.1)
                W[p + "attn_k.bias"] = rnd(kd, std=0.1)
                W[p + "attn_v.bias"] = rnd(kd, std=0.1)
            W[p + "attn_output.weight"] = rnd(d, qd)
            W[p + "ffn_norm.weight"] = 1 + rnd(d, std=0.1)
            W[p + "ffn_gate.weight"] = rnd(f, d)
            W[p + "ffn_up.weight"] = rnd(f, d)
            W[p + "ffn_down.weight"] = rnd(d, f)
        W["output_norm.weight"] = 1 + rnd(d, std=0.1)
        if not cfg["tied"]:
            W["output.weight"] = rnd(cfg["vocab"], d)
        self.W = W
        self.inv = rope_freqs(cfg)

    def lin(self, x, l, t, ad):
        name = f"blk.{l}.{TNAME[t]}.weight"
        y = x @ self.W[name].t()
        if t in ("q", "k", "v") and self.cfg["qkv_bias"]:
            y = y + self.W[f"blk.{l}.{TNAME[t]}.bias"]
        if ad is not None and t in ad["targets"]:
            A, B = ad["w"][name + ".lora_a"], ad["w"][name + ".lora_b"]
            y = y + (ad["alpha"] / ad["rank"]) * ((x @ A.t()) @ B.t())
        return y

    def forward(self, tok, ad):
        """tok: LongTensor [T] (one sequence). Returns logits [T,V], hidden [T,d]."""
        cfg, W = self.cfg, self.W
        T = tok.shape[0]
        pos = torch.arange(T)
        x = W["token_embd.weight"][tok]
        H, KVH, hd = cfg["heads"], cfg["kv_heads"], self.hd
        mask = torch.full((T, T), float("-inf")).triu(1)
        for l in range(cfg["layers"]):
            h = rmsnorm(x, W[f"blk.{l}.attn_norm.weight"], cfg["eps"])
            q = self.lin(h, l, "q", ad).view(T, H, hd)
            k = self.lin(h, l, "k", ad).view(T, KVH, hd)
            v = self.lin(h, l, "v", ad).view(T, KVH, hd)
            q, k = rope(q, pos, self.inv, cfg["layout"]), rope(k, pos, self.inv, cfg["layout"])
            rep = H // KVH
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            att = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
            att = torch.softmax(att, dim=-1)
            o = torch.einsum("hts,shd->thd", att, v).reshape(T, H * hd)
            x = x + self.lin(o, l, "o", ad)
            h = rmsnorm(x, W[f"blk.{l}.ffn_norm.weight"], cfg["eps"])
            g, u = self.lin(h, l, "gate", ad), self.lin(h, l, "up", ad)
            x = x + self.lin(torch.nn.functional.silu(g) * u, l, "down", ad)
        hid = rmsnorm(x, W["output_norm.weight"], cfg["eps"])
        out = W["token_embd.weight"] if cfg["tied"] else W["output.weight"]
        return hid @ out.t(), hid


def make_adapter(model, spec, gen, std_b):
    cfg = model.cfg
    ad = dict(rank=spec["rank"], alpha=spec["alpha"], targets=spec["targets"], w={})
    for l in range(cfg["layers"]):
        for t in TARGETS:
            if t not in spec["targets"]:
                continue
            name = f"blk.{l}.{TNAME[t]}.weight"
            out_f, in_f = model.W[name].shape
            ad["w"][name + ".lora_a"] = (torch.rand(spec["rank"], in_f, generator=gen) * 2 - 1) / math.sqrt(in_f)
            ad["w"][name + ".lora_b"] = torch.randn(out_f, spec["rank"], generator=gen) * std_b
    return ad


def write(path, recs):
    with open(path, "wb") as f:
        for name, t in recs:
            t = t.detach().float().contiguous()
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<I", t.dim()) + struct.pack(f"<{t.dim()}I", *t.shape))
            f.write(t.numpy().astype("<f4").tobytes())


def run(name):
    cfg = CONFIGS[name]
    gen = torch.Generator().manual_seed(1234 if name == "llama" else 4321)
    model = Model(cfg, gen)
    a1 = make_adapter(model, cfg["a1"], gen, 0.2)
    a2 = make_adapter(model, cfg["a2"], gen, 0.2)
    d = cfg["dim"]
    head = dict(W1=torch.randn(d, d, generator=gen) / math.sqrt(d), b1=torch.randn(d, generator=gen) * 0.1,
                w2=torch.randn(d, generator=gen) / math.sqrt(d), b2=torch.randn(1, generator=gen) * 0.1)
    N = sum(SEQ_LENS)
    tokens = torch.randint(0, cfg["vocab"], (N,), generator=gen)
    targets, mask = torch.full((N,), -1, dtype=torch.long), torch.zeros(N)
    o = 0
    for L in SEQ_LENS:
        targets[o:o + L - 1] = tokens[o + 1:o + L]
        mask[o:o + L - 1] = 1.0
        o += L
    mask[2] = 0.0   # a masked position inside a sequence
    head_pos = torch.tensor([3, 9, 18])
    head_y = torch.tensor([0.5, -1.0, 2.0])

    train = list(a1["w"].values()) + list(head.values())
    for p in train:
        p.requires_grad_(True)

    def loss_fn():
        lg1, hid1, lg2 = [], [], []
        o = 0
        for L in SEQ_LENS:
            l1, h1 = model.forward(tokens[o:o + L], a1)
            with torch.no_grad():
                l2, _ = model.forward(tokens[o:o + L], a2)
            lg1.append(l1); hid1.append(h1); lg2.append(l2)
            o += L
        lg1, hid1, lg2 = torch.cat(lg1), torch.cat(hid1), torch.cat(lg2)
        lp1 = torch.log_softmax(lg1, -1)
        lp2 = torch.log_softmax(lg2, -1)
        tgt = targets.clamp(min=0)
        logp = lp1.gather(1, tgt[:, None])[:, 0]
        cnt = mask.sum()
        l_lm = -(mask * logp).sum() / cnt
        kl = (lp1.exp() * (lp1 - lp2)).sum(-1)
        l_kl = BETA * (mask * kl).sum() / cnt
        hh = torch.relu(hid1[head_pos] @ head["W1"].t() + head["b1"])
        v = hh @ head["w2"] + head["b2"]
        l_h = 0.5 * ((v - head_y) ** 2).mean()
        return l_lm + l_kl + l_h, lg1, (l_lm, l_kl, l_h)

    loss, logits, parts = loss_fn()
    loss.backward()
    recs = []

    class Recs(list):   # snapshot values now: the AdamW steps below update tensors in place
        def append(self, item):
            super().append((item[0], item[1].detach().clone()))
    recs = Recs()
    c = cfg
    sc = c["scaling"] or (0, 0, 0, 0)
    recs.append(("config", torch.tensor([c["vocab"], c["dim"], c["layers"], c["heads"], c["kv_heads"], c["ffn"],
                                         c["eps"], c["theta"], 0 if c["layout"] == "adjacent" else 1,
                                         1 if c["scaling"] else 0, sc[0], sc[1], sc[2], sc[3],
                                         int(c["qkv_bias"]), int(c["tied"])], dtype=torch.float64)))
    for k, t in model.W.items():
        recs.append((k, t))
    for an, ad in (("a1", a1), ("a2", a2)):
        bits = sum(1 << i for i, t in enumerate(TARGETS) if t in ad["targets"])
        recs.append((an + ".config", torch.tensor([ad["rank"], ad["alpha"], bits])))
        for k, t in ad["w"].items():
            recs.append((f"{an}.{k}", t))
    for k, t in head.items():
        recs.append(("head." + k, t))
    recs.append(("input.seq_lens", torch.tensor(SEQ_LENS)))
    recs.append(("input.tokens", tokens))
    recs.append(("input.targets", targets))
    recs.append(("input.mask", mask))
    recs.append(("input.head_pos", head_pos))
    recs.append(("input.head_y", head_y))
    recs.append(("input.beta", torch.tensor([BETA])))
    recs.append(("out.logits", logits))
    recs.append(("out.loss", torch.stack([loss] + list(parts))))
    for k, t in a1["w"].items():
        recs.append((f"grad.a1.{k}", t.grad))
    for k, t in head.items():
        recs.append((f"grad.head.{k}", t.grad))
    # 10 AdamW steps from the same start
    for p in train:
        p.grad = None
    opt = torch.optim.AdamW(train, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    losses = []
    for step in range(10):
        opt.zero_grad()
        loss, _, _ = loss_fn()
        losses.append(loss.item())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(train, 1.0)
        opt.step()
    recs.append(("out.adamw_losses", torch.tensor(losses)))
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"ref_{name}.bin")
    write(path, recs)
    print(f"{path}: loss {loss_fn()[0].item():.6f} -> 10-step losses {[round(x, 5) for x in losses]}")


if __name__ == "__main__":
    for n in (sys.argv[1:] or ["llama", "qwen2"]):
        run(n)
