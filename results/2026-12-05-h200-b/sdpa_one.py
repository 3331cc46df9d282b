# One shape through PyTorch SDPA's cuDNN or FLASH backend, a few calls (for ncu): B S H D backend [causal]
import sys, torch
from torch.nn.attention import sdpa_kernel, SDPBackend
b, s, h, d = map(int, sys.argv[1:5])
kb = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[sys.argv[5]]
causal = len(sys.argv) > 6 and sys.argv[6] == "causal"
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(kb):
    for _ in range(5): torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
