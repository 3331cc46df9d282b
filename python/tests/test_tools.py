"""The parts of tools/hf_check.py and tools/peer_bench.py that run without a GPU, under pytest.

  PORTATTN_LIBRARY=build/libportattn.so python3 -m pytest python/tests/test_tools.py -s

hf_check: the model choice, its glue to transformers (on a stand-in for it), the plain decoder and its
KV cache (a stand-in SDPA where PyTorch has none), the SDPA watcher's counts and fallback reasons, the
dtype cast that keeps rotary buffers, the token comparison and the verdict (a run in which portattn
computed nothing fails). peer_bench --sdpa-portattn: its refusal on a PyTorch without the flash
registry, and its check, speed comparison and table on rows as the GPU run fills them. Fresh random
inputs each run; the seed is printed (PORTATTN_TEST_SEED).
"""
import importlib.util
import math
import os
import random
import types

import pytest

torch = pytest.importorskip("torch")

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools")


def load_tool(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOOLS, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def has_registry():
    att = getattr(torch.nn, "attention", None)
    return hasattr(att, "register_flash_attention_impl")


@pytest.fixture(autouse=True)
def seed(torch_seed):
    random.seed(torch_seed)
    return torch_seed


def math_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention's math on (B, H, S, D), top-left causal as SDPA's, for PyTorches
    without it."""
    assert attn_mask is None and dropout_p == 0.0
    if enable_gqa:
        g = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q.float() @ k.float().transpose(-1, -2)) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return (s.softmax(-1) @ v.float()).to(q.dtype)


class FakeRegistry:
    """portattn.torch's counters as the watcher reads them; `decline` says which calls fall back."""

    def __init__(self, decline):
        self.decline, self.n, self.reason = decline, {"portattn": 0, "pytorch": 0}, None

    def sdpa(self, *a, **kw):
        if self.decline(kw):
            self.n["pytorch"] += 2  # PyTorch's SDPA kernel calls a second flash operator
            self.reason = "a stand-in reason"
        else:
            self.n["portattn"] += 1
        return math_sdpa(*a, **kw)

    def counts(self):
        return dict(self.n)

    def last_fallback_reason(self):
        return self.reason


# ---- hf_check ---------------------------------------------------------------------------------

def small_args(hf, *extra):
    return hf.parse_args(["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--vocab", "97",
                          "--batch", "2", "--prompt", "11", "--new-tokens", "5"] + list(extra))


def test_hf_check_model_choice():
    hf = load_tool("hf_check")
    assert hf.pick_model("plain")[0] == "plain"
    if importlib.util.find_spec("transformers") is not None:
        assert hf.pick_model("auto")[0] == "transformers"
        return
    kind, module, why = hf.pick_model("auto")
    assert (kind, module) == ("plain", None) and "transformers" in why
    with pytest.raises(RuntimeError, match="--model transformers"):
        hf.pick_model("transformers")
    assert "plain-PyTorch" in hf.describe("plain", small_args(hf), why)
    with pytest.raises(SystemExit):
        hf.parse_args(["--heads", "6", "--kv-heads", "4"])  # not a multiple: refused before any work


def test_hf_check_plain_decoder_and_watcher(monkeypatch):
    """Greedy decoding with the KV cache gives the tokens a full recompute gives; the watcher counts every
    SDPA call, the causal ones, and the reason of each call that fell back."""
    hf = load_tool("hf_check")
    args = small_args(hf)
    fake = FakeRegistry(decline=lambda kw: not kw.get("is_causal"))  # decode steps fall back
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", fake.sdpa, raising=False)
    model = hf.Model(torch, "plain", hf.build_plain(torch, args)).to(dtype=torch.float32)
    ids = torch.randint(0, args.vocab, (args.batch, args.prompt))
    with torch.no_grad(), hf.watching_sdpa(torch, fake) as seen:
        tokens, gaps = model.generate(ids, args.new_tokens)
    assert torch.nn.functional.scaled_dot_product_attention == fake.sdpa, "the watcher did not put SDPA back"
    calls = args.layers * (1 + args.new_tokens)
    assert seen["calls"] == calls and seen["causal"] == args.layers and seen["masked"] == 0
    assert seen["fallbacks"] == {"a stand-in reason": calls - args.layers}
    assert tokens.shape == (args.batch, args.new_tokens) and bool((gaps >= 0).all())
    seq = ids
    with torch.no_grad():
        for t in range(args.new_tokens):
            nxt = model.logits(seq)[:, -1].argmax(-1)
            assert torch.equal(nxt, tokens[:, t]), "step %d: cached decoding differs from a full recompute" % t
            seq = torch.cat((seq, nxt[:, None]), 1)


def test_hf_check_cast_keeps_float_buffers():
    hf = load_tool("hf_check")
    module = torch.nn.Linear(8, 8)
    freq = torch.rand(4, dtype=torch.float32) + 0.1
    module.register_buffer("inv_freq", freq.clone(), persistent=False)
    hf.Model(torch, "transformers", module).to(dtype=torch.bfloat16)
    assert module.weight.dtype == torch.bfloat16
    assert module.inv_freq.dtype == torch.float32 and torch.equal(module.inv_freq, freq)


class FakeLlama(torch.nn.Module):
    """What hf_check uses of transformers' LlamaForCausalLM: config, lm_head, forward(...).logits and
    generate(...).sequences/.scores."""

    def __init__(self, cfg, zero_head=False):
        super().__init__()
        self.config = types.SimpleNamespace(_attn_implementation=cfg.kw["attn_implementation"])
        self.lm_head = torch.nn.Linear(cfg.kw["hidden_size"], cfg.kw["vocab_size"], bias=False)
        if zero_head:
            torch.nn.init.zeros_(self.lm_head.weight)
        self.steps = None

    def generate(self, input_ids, attention_mask, do_sample, max_new_tokens, return_dict_in_generate,
                 output_scores):
        assert bool(attention_mask.all()) and not do_sample and return_dict_in_generate and output_scores
        B, V = input_ids.shape[0], self.lm_head.weight.shape[0]
        scores = [torch.randn(B, V) for _ in range(self.steps or max_new_tokens)]
        toks = torch.stack([sc.argmax(-1) for sc in scores], 1)
        return types.SimpleNamespace(sequences=torch.cat((input_ids, toks), 1), scores=tuple(scores))


def fake_transformers(zero_head=False):
    class LlamaConfig:
        def __init__(self, **kw):
            self.kw = kw
    return types.SimpleNamespace(LlamaConfig=LlamaConfig, __version__="0-fake",
                                 LlamaForCausalLM=lambda cfg: FakeLlama(cfg, zero_head))


def test_hf_check_transformers_glue(seed):
    """build_hf's config and head scaling, Model.generate's tokens and gaps, on a stand-in for transformers
    (not installed here: the real model runs on the GPU machine)."""
    hf = load_tool("hf_check")
    args = small_args(hf)
    model = hf.build_hf(torch, fake_transformers(), args)
    torch.manual_seed(args.seed)  # build_hf draws the weights from --seed
    fresh = FakeLlama(types.SimpleNamespace(kw={"attn_implementation": "sdpa", "hidden_size": args.hidden,
                                                "vocab_size": args.vocab}))
    assert torch.allclose(model.lm_head.weight, fresh.lm_head.weight * hf.HEAD_SCALE)
    torch.manual_seed(seed)  # the inputs below are fresh again
    with pytest.raises(RuntimeError, match="uninitialised"):
        hf.build_hf(torch, fake_transformers(zero_head=True), args)

    ids = torch.randint(0, args.vocab, (args.batch, args.prompt))
    tokens, gaps = hf.Model(torch, "transformers", model).generate(ids, args.new_tokens)
    assert tokens.shape == gaps.shape == (args.batch, args.new_tokens) and bool((gaps > 0).all())
    model.steps = args.new_tokens - 1  # a generate that stopped early
    with pytest.raises(RuntimeError, match="new tokens"):
        hf.Model(torch, "transformers", model).generate(ids, args.new_tokens)


def test_hf_check_token_comparison_and_verdict():
    hf = load_tool("hf_check")
    B, n = 3, 20
    base = torch.randint(0, 1000, (B, n))
    gaps = torch.rand(B, n) + 0.5
    ours = base.clone()
    i, j = random.randrange(n), random.randrange(n)
    ours[1, i:] = (base[1, i:] + 1) % 1000
    ours[2, j:] = (base[2, j:] + 7) % 1000
    gaps[1, i] = 0.01  # a near tie: within 2 x the error below
    err = 0.02
    diffs = hf.first_differences(ours, base, gaps, err)
    assert diffs[0] is None
    assert diffs[1][0] == i and diffs[1][2] and math.isclose(diffs[1][1], float(gaps[1, i]))
    assert diffs[2][0] == j and not diffs[2][2], "a difference at a clear gap is not a tie"
    assert not hf.verdict(5, True, diffs)
    assert hf.verdict(5, True, diffs[:2])
    assert not hf.verdict(0, True, [None] * B), "a run in which portattn computed nothing must fail"
    assert not hf.verdict(5, False, [None] * B)


# ---- peer_bench --sdpa-portattn ---------------------------------------------------------------

def test_peer_bench_sdpa_portattn_needs_the_registry(capsys):
    if has_registry():
        pytest.skip("PyTorch %s has the registry: the option runs on a GPU" % torch.__version__)
    pb = load_tool("peer_bench")
    assert pb.main(["--sdpa-portattn", "--no-bench"]) == 2
    out = capsys.readouterr().out
    assert "--sdpa-portattn" in out and "2.11" in out, out


def timing(ms, width):
    return {"ms": ms, "ms_p20": ms - width / 2, "ms_p80": ms + width / 2}


def test_peer_bench_sdpa_row_check_and_speed(capsys):
    pb = load_tool("peer_bench")
    bound = 10 ** random.uniform(-3, -2)
    row = {"mode": "prefill", "dtype": "bf16", "d": 128, "s": 4096, "b": 4, "h": 16, "causal": True,
           "bound": bound, "bound_from": "peers",
           "impls": {"FA2": dict(timing(1.0, 0.02), rel_l2=bound / 3), "portattn": timing(0.8, 0.02)}}
    ok = {"rel_l2": bound * 0.9, "portattn_calls": 1}
    assert pb.sdpa_check(dict(ok), row) == "PASS"
    assert pb.sdpa_check(dict(ok, rel_l2=bound * 1.1), row) == "FAIL"
    assert pb.sdpa_check(dict(ok, rel_l2=float("nan")), row) == "FAIL"
    silent = dict(ok, portattn_calls=0)
    assert pb.sdpa_check(silent, row) == "FAIL" and "without calling portattn" in silent["error"]
    assert pb.sdpa_check({"error": "RuntimeError: portattn declined"}, row) == "FAIL"
    no_flash = dict(row, impls={"FA2": {"error": "No available kernel"}})
    assert pb.sdpa_check({"error": "No available kernel"}, no_flash) == "n/a"

    same = pb.beside(timing(0.81, 0.03), row["impls"])  # 1% apart, spread 3%
    assert same["within_spread"] and math.isclose(same["vs_direct"], 0.8 / 0.81)
    assert math.isclose(same["vs_FA2"], 1.0 / 0.81) and "vs_cuDNN" not in same
    slow = pb.beside(timing(0.9, 0.02), row["impls"])
    assert slow["within_spread"] is False and slow["vs_direct"] < 1
    assert pb.beside({"error": "x"}, row["impls"]) == {}

    assert pb.ours(pb.SDPA_PORTATTN) and pb.ours("portattn[cuda-sm80]") and not pb.ours("FA2")
    assert not pb.SDPA_PORTATTN.startswith("portattn"), "tools/report.py would count it as a direct series"
    row["impls"][pb.SDPA_PORTATTN] = dict(ok, check="PASS", **timing(0.81, 0.03), **same)
    pb.print_point(row)
    pb.print_sdpa_table([row, dict(row, impls={"portattn": {}})])
    out = capsys.readouterr().out
    assert "time of direct portattn / this 0.99x (the same within the spread)" in out, out
    assert "| %s | 0.8000 | 0.8100 | 0.99x | yes |" % pb.point_name(row) in out, out
    assert "1 points timed" in out and "0 outside the spread" in out, out


def test_peer_bench_keeps_sdpa_row_out_of_report():
    """tools/report.py reads the file: the SDPA row must not become a series of direct portattn calls."""
    report = load_tool("report")
    row = {"mode": "prefill", "dtype": "bf16", "d": 64, "s": 1024, "b": 16, "h": 32, "causal": False,
           "impls": {"portattn": {"ms": 0.5, "tflops": 200.0, "backend": "cuda-sm90"},
                     "SDPA-FLASH[portattn]": {"ms": 0.51, "tflops": 196.0, "check": "PASS"}}}
    recs = report.from_peer_bench("x.json", {"tool": "peer_bench", "format": 1, "device": "H200", "rows": [row]})
    assert [r["series"] for r in recs] == ["portattn cuda-sm90"], recs



# ---- peer_bench --shape / --sweep encoder ------------------------------------------------------

def test_peer_bench_model_shapes():
    """--shape gives a model's (B, S, H, D) point as asked; --sweep encoder the six encoder shapes,
    non-causal; a malformed shape is a usage error, not a crash at the first point."""
    pb = load_tool("peer_bench")
    a = pb.parse_args(["--shape", "2,77,8,64", "--shape", "4,197,12,40", "--causal", "yes"])
    assert a.shapes == [(2, 77, 8, 64), (4, 197, 12, 40)] and a.causal == "yes"
    a = pb.parse_args(["--sweep", "encoder", "--dtype", "bf16,fp16"])
    assert len(a.shapes) == 6 and (512, 77, 8, 64) in a.shapes and a.causal == "no" and a.dtypes == ["bf16", "fp16"]
    for bad in ("1,2,3", "1,2,x,4", "0,2,3,4"):
        with pytest.raises(SystemExit):
            pb.parse_args(["--shape", bad])
