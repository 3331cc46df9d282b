#!/usr/bin/env python3
"""A small randomly initialised Llama-style decoder run with portattn as PyTorch's flash attention and
with PyTorch's own flash kernel: a forward pass and greedy generation with a KV cache.

  PORTATTN_LIBRARY=build/libportattn.so python3 tools/hf_check.py [--layers 4] [--new-tokens 48]

The model is plain PyTorch (no transformers, no downloaded weights; Hugging Face models call attention
the same way, through F.scaled_dot_product_attention): token embedding, --layers blocks of RMSNorm,
rotary embedding, GQA attention (--heads query heads, --kv-heads key/value heads, repeated to the
query heads before SDPA), SwiGLU MLP, an untied LM head; bf16 weights drawn from --seed. Attention
runs under SDPA's FLASH backend: prompts with is_causal=True, decode steps (one query over the cache)
without a mask.

Checks, each run once with portattn active (fallback=False: every attention call must be portattn's)
and once with PyTorch's kernel:
  - forward logits of a --batch x --prompt batch against the same model in fp32 with the math backend:
    portattn's max error at most 3x PyTorch flash's (bf16 tolerance by FlashAttention's rule);
  - greedy generation of --new-tokens tokens from the prompts: the same tokens, or a first difference
    where PyTorch's top two logits are closer than the forward's bf16 error (a tie either kernel may
    break), printed as such.
Exit status: 0 pass, 1 a check fails, 77 skipped (no CUDA device, or a PyTorch without the flash
implementation registry).
"""
import argparse
import importlib.util
import math
import os
import sys

if importlib.util.find_spec("portattn") is None:  # an installed portattn (a wheel) first, else the repository's
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=384)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def build_model(torch, args):
    nn, F = torch.nn, torch.nn.functional
    head_dim = args.hidden // args.heads

    class RMSNorm(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            x32 = x.float()
            return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.weight

    def rotary(x, pos):
        """Rotate (B, H, S, D) by positions pos (S,): the half-split form Llama uses."""
        half = x.shape[-1] // 2
        freq = 10000.0 ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
        ang = pos.float()[:, None] * freq[None, :]
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), -1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(args.hidden), RMSNorm(args.hidden)
            self.q = nn.Linear(args.hidden, args.heads * head_dim, bias=False)
            self.kv = nn.Linear(args.hidden, 2 * args.kv_heads * head_dim, bias=False)
            self.o = nn.Linear(args.heads * head_dim, args.hidden, bias=False)
            self.up = nn.Linear(args.hidden, 2 * 2 * args.hidden, bias=False)
            self.down = nn.Linear(2 * args.hidden, args.hidden, bias=False)

        def forward(self, x, pos, cache):
            B, S, _ = x.shape
            h = self.n1(x)
            q = self.q(h).view(B, S, args.heads, head_dim).transpose(1, 2)
            k, v = self.kv(h).view(B, S, 2, args.kv_heads, head_dim).permute(2, 0, 3, 1, 4)
            q, k = rotary(q, pos), rotary(k, pos)
            if cache is not None:
                if cache:
                    k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
                cache[:] = [k, v]
            g = args.heads // args.kv_heads
            k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=S > 1)  # one new token sees the whole cache
            x = x + self.o(a.transpose(1, 2).reshape(B, S, -1))
            gate, up = self.up(self.n2(x)).chunk(2, -1)
            return x + self.down(F.silu(gate) * up)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(args.vocab, args.hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.norm = RMSNorm(args.hidden)
            self.head = nn.Linear(args.hidden, args.vocab, bias=False)

        def forward(self, ids, start=0, caches=None):
            pos = torch.arange(start, start + ids.shape[1], device=ids.device)
            x = self.emb(ids)
            for i, blk in enumerate(self.blocks):
                x = blk(x, pos, None if caches is None else caches[i])
            return self.head(self.norm(x)).float()

    torch.manual_seed(args.seed)
    model = Decoder()
    with torch.no_grad():  # peaked logits: greedy decoding with few exact ties
        model.head.weight.mul_(4.0)
    return model


def greedy(torch, model, ids, new_tokens):
    """Greedy decoding with the KV cache: (tokens (B, new), top-2 logit gaps (B, new))."""
    caches = [[] for _ in model.blocks]
    logits = model(ids, 0, caches)[:, -1]
    out, gaps, start = [], [], ids.shape[1]
    for _ in range(new_tokens):
        top = logits.topk(2, -1).values
        gaps.append(top[:, 0] - top[:, 1])
        nxt = logits.argmax(-1, keepdim=True)
        out.append(nxt)
        logits = model(nxt, start, caches)[:, -1]
        start += 1
    return torch.cat(out, 1), torch.stack(gaps, 1)


def run(torch, model, ids, args, flash):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION if flash else SDPBackend.MATH):
        logits = model(ids)
        tokens, gaps = greedy(torch, model, ids, args.new_tokens) if flash else (None, None)
    return logits, tokens, gaps


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        import portattn.torch as pt
        pt._api()
    except (ImportError, RuntimeError) as e:
        print("SKIP: %s" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    model = build_model(torch, args).cuda()
    ids = torch.randint(0, args.vocab, (args.batch, args.prompt), device="cuda",
                        generator=torch.Generator(device="cuda").manual_seed(args.seed))
    ref = run(torch, model.float(), ids, args, flash=False)[0]
    model = model.to(torch.bfloat16)
    base_logits, base_tokens, base_gaps = run(torch, model, ids, args, flash=True)
    pt.activate(fallback=False)
    try:
        n = pt.counts()["portattn"]
        ours_logits, ours_tokens, _ = run(torch, model, ids, args, flash=True)
        calls = pt.counts()["portattn"] - n
    finally:
        pt.restore()
    err_ours = (ours_logits - ref).abs().max().item()
    err_base = (base_logits - ref).abs().max().item()
    ok_logits = math.isfinite(err_ours) and err_ours <= 3 * err_base + 1e-3
    print("PyTorch %s on %s: %d portattn attention calls; logits max err vs fp32: portattn %.3e, PyTorch flash "
          "%.3e (%s); |portattn - PyTorch flash| %.3e" % (torch.__version__, torch.cuda.get_device_name(), calls,
                                                         err_ours, err_base, "ok" if ok_logits else "FAIL",
                                                         (ours_logits - base_logits).abs().max().item()))
    same = ours_tokens == base_tokens
    ok_tokens = True
    for b in range(args.batch):
        if bool(same[b].all()):
            print("sequence %d: %d generated tokens identical" % (b, args.new_tokens))
            continue
        i = int((~same[b]).nonzero()[0])
        gap = base_gaps[b, i].item()
        tie = gap <= 2 * err_base
        ok_tokens &= tie
        print("sequence %d: first different token at step %d (top-2 logit gap %.3e, %s)" % (
            b, i, gap, "a tie within bf16 error" if tie else "FAIL: not a tie"))
    ok = ok_logits and ok_tokens and calls > 0
    print("hf_check: %s" % ("pass" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
