# One SDPA call of a given shape under a chosen backend, repeated, for ncu.
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
b, s, h, d = map(int, sys.argv[1:5]); be = sys.argv[5]; causal = len(sys.argv) > 6 and sys.argv[6] == "1"
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
bk = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[be]
with sdpa_kernel(bk):
    for _ in range(4):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
