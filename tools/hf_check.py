#!/usr/bin/env python3
"""A small randomly initialised Llama decoder run with portattn as PyTorch's flash attention and with
PyTorch's own flash kernel: a forward pass and greedy generation.

  PORTATTN_LIBRARY=build/libportattn.so python3 tools/hf_check.py [--model auto|transformers|plain]

The model (--model auto: the first that can run here):
  transformers  Hugging Face's LlamaForCausalLM built from a LlamaConfig (no downloaded weights):
                --layers, --hidden, --heads query heads, --kv-heads key/value heads (GQA, which SDPA
                gets as enable_gqa), --vocab; attn_implementation "sdpa", weights drawn from --seed,
                bf16. The forward is model(input_ids); generation is model.generate(do_sample=False)
                with its own KV cache. The prompts have equal length and no padding, so every SDPA
                call carries is_causal (prefill) or nothing (one new token over the cache), no mask.
  plain         the same architecture in plain PyTorch, used when transformers is not installed:
                RMSNorm, rotary embedding, GQA attention (key/value heads repeated before SDPA),
                SwiGLU MLP, an untied LM head, greedy decoding with a KV cache of its own.
The LM head is scaled up (peaked logits, so greedy decoding meets few exact ties). Attention runs under
SDPA's FLASH backend in both runs: once with portattn active (fallback on: a call portattn declines
runs on PyTorch's kernel and is reported with the reason), once with PyTorch's own kernel.

Checks:
  - forward logits of a --batch x --prompt batch against the same model in fp32 with the math backend:
    portattn's max error at most 3x PyTorch flash's (bf16 tolerance by FlashAttention's rule);
  - greedy generation of --new-tokens tokens: the same tokens, or a first difference where PyTorch's
    top two logits are closer than twice the forward's bf16 error (a tie either kernel may break);
  - portattn computed at least one attention call (a run in which every call went elsewhere fails);
    its calls, the SDPA calls seen and every fallback reason are printed.
Exit status: 0 pass, 1 a check fails, 2 cannot run (--model transformers without transformers),
77 skipped (no CUDA device, or a PyTorch without the flash implementation registry).
"""
import argparse
import contextlib
import importlib.util
import math
import os
import sys

if importlib.util.find_spec("portattn") is None:  # an installed portattn (a wheel) first, else the repository's
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

HEAD_SCALE = 4.0  # LM head weights x this: peaked logits, few exact ties in greedy decoding


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--model", choices=("auto", "transformers", "plain"), default="auto")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=384)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.heads <= 0 or args.kv_heads <= 0 or args.heads % args.kv_heads or args.hidden % args.heads:
        ap.error("--heads must divide --hidden and be a multiple of --kv-heads")
    return args


def pick_model(choice):
    """(kind, transformers module or None, why): the model this run uses."""
    if choice == "plain":
        return "plain", None, "--model plain"
    try:
        import transformers
    except ImportError as e:
        if choice == "transformers":
            raise RuntimeError("--model transformers: %s" % e) from None
        return "plain", None, "transformers is not installed (%s)" % e
    return "transformers", transformers, "transformers %s is installed" % transformers.__version__


def build_plain(torch, args):
    """The Llama-style decoder in plain PyTorch (the model when transformers is not installed)."""
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


def greedy_plain(torch, model, ids, new_tokens):
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


def build_hf(torch, transformers, args):
    """LlamaForCausalLM from a config, random weights from --seed, SDPA attention."""
    cfg = transformers.LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        max_position_embeddings=max(2048, args.prompt + args.new_tokens),
        bos_token_id=None, eos_token_id=None, pad_token_id=None,  # no early stop: every sequence gets every token
        attn_implementation="sdpa")
    torch.manual_seed(args.seed)
    model = transformers.LlamaForCausalLM(cfg).eval()
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        model.set_attn_implementation("sdpa")
    head = model.lm_head.weight
    if not (bool(torch.isfinite(head).all()) and head.float().std().item() > 0):
        raise RuntimeError("LlamaForCausalLM(config) left the LM head uninitialised")
    with torch.no_grad():
        head.mul_(HEAD_SCALE)
    return model


class Model:
    """The two models behind one interface: logits of a forward pass, greedy generation."""

    def __init__(self, torch, kind, module):
        self.torch, self.kind, self.module = torch, kind, module

    def to(self, **kw):
        """Module.to, but floating buffers (Llama's rotary frequencies) keep their dtype, as in a model
        Hugging Face loads in bf16: rounding them would move every position's rotation."""
        kept = [(m, name, buf) for m in self.module.modules() for name, buf in m._buffers.items()
                if buf is not None and buf.is_floating_point()]
        self.module.to(**kw)
        for m, name, buf in kept:
            m._buffers[name] = buf.to(device=m._buffers[name].device)
        return self

    def logits(self, ids):
        if self.kind == "plain":
            return self.module(ids)
        return self.module(input_ids=ids, use_cache=False).logits.float()

    def generate(self, ids, new_tokens):
        """(tokens (B, new), top-2 logit gaps (B, new)) of greedy decoding."""
        if self.kind == "plain":
            return greedy_plain(self.torch, self.module, ids, new_tokens)
        out = self.module.generate(input_ids=ids, attention_mask=self.torch.ones_like(ids), do_sample=False,
                                   max_new_tokens=new_tokens, return_dict_in_generate=True, output_scores=True)
        tokens = out.sequences[:, ids.shape[1]:]
        if tokens.shape[1] != new_tokens or len(out.scores or ()) != new_tokens:
            raise RuntimeError("generate gave %d new tokens and %d scores, not %d" % (
                tokens.shape[1], len(out.scores or ()), new_tokens))
        top = self.torch.stack(out.scores, 1).float().topk(2, -1).values
        return tokens, top[..., 0] - top[..., 1]


def describe(kind, args, why):
    shape = "%d layers, hidden %d, %d query heads, %d key/value heads, vocab %d" % (
        args.layers, args.hidden, args.heads, args.kv_heads, args.vocab)
    if kind == "plain":
        return "plain-PyTorch Llama-style decoder (%s; %s)" % (shape, why)
    return "Hugging Face LlamaForCausalLM, attn_implementation sdpa (%s; %s)" % (shape, why)


@contextlib.contextmanager
def watching_sdpa(torch, pt):
    """Counts the SDPA calls made inside (with a mask, causal, GQA) and, per call, the reason portattn
    gave when PyTorch's kernel ran it instead."""
    nnf = torch.nn.functional
    real = nnf.scaled_dot_product_attention
    seen = {"calls": 0, "masked": 0, "causal": 0, "gqa": 0, "fallbacks": {}}

    def spy(*a, **kw):
        seen["calls"] += 1
        seen["masked"] += (kw.get("attn_mask") if len(a) < 4 else a[3]) is not None
        seen["causal"] += bool(kw.get("is_causal"))
        seen["gqa"] += bool(kw.get("enable_gqa"))
        before = pt.counts()["pytorch"]
        out = real(*a, **kw)
        if pt.counts()["pytorch"] > before:
            why = pt.last_fallback_reason()
            seen["fallbacks"][why] = seen["fallbacks"].get(why, 0) + 1
        return out

    nnf.scaled_dot_product_attention = spy
    try:
        yield seen
    finally:
        nnf.scaled_dot_product_attention = real


def run(torch, model, ids, args, flash):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION if flash else SDPBackend.MATH):
        logits = model.logits(ids)
        tokens, gaps = model.generate(ids, args.new_tokens) if flash else (None, None)
    return logits, tokens, gaps


def first_differences(ours, base, gaps, err_base):
    """Per sequence: None when the tokens agree, else (step, PyTorch's top-2 gap there, a tie?). A
    difference is a tie when the gap is within twice the bf16 logits error of PyTorch's flash run."""
    out = []
    for b in range(base.shape[0]):
        diff = (ours[b] != base[b]).nonzero()
        if diff.numel() == 0:
            out.append(None)
            continue
        i = int(diff[0])
        gap = float(gaps[b, i])
        out.append((i, gap, gap <= 2 * err_base))
    return out


def verdict(calls, ok_logits, differences):
    """Pass only when portattn computed attention calls, the logits are within the bound and every
    token difference is a tie."""
    return calls > 0 and ok_logits and all(d is None or d[2] for d in differences)


def report_calls(seen, calls, fallbacks):
    print("SDPA calls with portattn active: %d (%d causal, %d GQA, %d with a mask); portattn computed %d "
          "flash operator calls, PyTorch's kernel %d" % (seen["calls"], seen["causal"], seen["gqa"], seen["masked"],
                                                        calls, fallbacks))
    for why, n in sorted(seen["fallbacks"].items(), key=lambda x: -x[1]):
        print("  fallback to PyTorch's kernel on %d SDPA calls: %s" % (n, why))
    if calls == 0:
        print("FAIL: portattn computed no attention call: the run did not test portattn")


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
    try:
        kind, transformers, why = pick_model(args.model)
    except RuntimeError as e:
        print("hf_check: cannot run: %s" % e)
        return 2
    print("model: %s" % describe(kind, args, why))
    try:
        module = build_plain(torch, args) if kind == "plain" else build_hf(torch, transformers, args)
    except Exception as e:
        print("hf_check: FAIL: building the %s model: %s: %s" % (kind, type(e).__name__, e))
        return 1
    model = Model(torch, kind, module).to(device="cuda", dtype=torch.float32)
    ids = torch.randint(0, args.vocab, (args.batch, args.prompt), device="cuda",
                        generator=torch.Generator(device="cuda").manual_seed(args.seed))
    n, stage = pt.counts(), "the fp32 reference"
    try:
        ref = run(torch, model, ids, args, flash=False)[0]
        model.to(dtype=torch.bfloat16)
        stage = "PyTorch's flash kernel"
        base_logits, base_tokens, base_gaps = run(torch, model, ids, args, flash=True)
        stage = "portattn"
        with pt.activated(), watching_sdpa(torch, pt) as seen:
            ours_logits, ours_tokens, _ = run(torch, model, ids, args, flash=True)
    except RuntimeError as e:  # no FLASH kernel for a call (a mask), generate's own limits, ...
        print("hf_check: FAIL: the %s model's run on %s: %s" % (kind, stage, str(e).strip().splitlines()[0]))
        return 1
    calls, fallbacks = pt.counts()["portattn"] - n["portattn"], pt.counts()["pytorch"] - n["pytorch"]
    err_ours = (ours_logits - ref).abs().max().item()
    err_base = (base_logits - ref).abs().max().item()
    ok_logits = math.isfinite(err_ours) and err_ours <= 3 * err_base + 1e-3
    print("PyTorch %s on %s; logits max err vs fp32: portattn %.3e, PyTorch flash %.3e (%s); "
          "|portattn - PyTorch flash| %.3e" % (torch.__version__, torch.cuda.get_device_name(), err_ours, err_base,
                                               "ok" if ok_logits else "FAIL",
                                               (ours_logits - base_logits).abs().max().item()))
    report_calls(seen, calls, fallbacks)
    differences = first_differences(ours_tokens, base_tokens, base_gaps, err_base)
    for b, d in enumerate(differences):
        if d is None:
            print("sequence %d: %d generated tokens identical" % (b, args.new_tokens))
        else:
            print("sequence %d: first different token at step %d (top-2 logit gap %.3e, %s)" % (
                b, d[0], d[1], "a tie within bf16 error" if d[2] else "FAIL: not a tie"))
    ok = verdict(calls, ok_logits, differences)
    print("hf_check (%s model): %s" % (kind, "pass" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
