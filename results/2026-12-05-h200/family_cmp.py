# Compares dumps of the library before and after the kernel families' limits became data (call 3):
# every X-base.txt against X-new.txt in the folder given; the call, status, backend, kernel and
# workspace must agree, and a differing reason must be one of the unified wordings below.
import re, sys, glob, collections
# old wordings -> the new ones (the unified texts); anything else that differs is reported
subs = [
 (r"varlen with max_seqlen_q = (\d+): decode shapes \(<= 16 query tokens\) go to cuda-sm80", r"\1 query tokens (max_seqlen_q): takes 17 or more (decode shapes go to cuda-sm80)"),
 (r"(\d+) query tokens: cuda-sm80's split-KV decode kernel takes <= 16", r"\1 query tokens: takes 17 or more (decode shapes go to cuda-sm80)"),
 (r"(\d+) query tokens: decode shapes go to cuda-sm80's split-KV kernel", r"\1 query tokens@VL: takes 17 or more (decode shapes go to cuda-sm80)"),
 (r"the decode kernel declines \(dtype", r"the decode kernel declines (decode kernel: dtype"),
 (r"decode kernel: (\d+) query tokens per sequence \(takes <= 16\)", r"decode kernel: \1 query tokens: takes 16 or fewer"),
 (r"\bd(\d+) instance needs (\d+) bytes", r"@FAM:D\1 needs \2 bytes"),
 (r"decode d(\d+) needs (\d+) bytes", r"@DEC D\1 needs \2 bytes"),
 (r"\bd(\d+) \(KV cache\) needs (\d+) bytes", r"@FAM:D\1 needs \2 bytes"),
 (r"(?<![\w-])d(\d+) needs (\d+) bytes", r"@FAM:D\1 needs \2 bytes"),
 (r"d(\d+) backward needs (\d+) bytes of shared memory per block, FAKE GPU cc\d+ allows (\d+)( \(d256 needs an sm_90/sm_100-class 227 KB part; an A100 has 163 KB\))?", r"sm80-bwd d\1 needs \2 bytes of shared memory, device allows \3 per block"),
 (r"batch (\d+) or heads_q (\d+) over the grid's 65535", r"batch \1 x heads \2: @GRID"),
 (r"batch (\d+) x heads (\d+) over the grid's 65535\^2 blocks", r"batch \1 x heads \2: @GRID"),
 (r"batch (\d+) x heads (\d+) x row blocks over the grid's 2\^31-1", r"batch \1 x heads \2: @GRID"),
 (r"batch (\d+) x heads (\d+) x row blocks over 2\^31-1 work items", r"batch \1 x heads \2: @GRID"),
]
# the new grid texts, folded to the same token
newgrid = [
 (r"batch (\d+) x heads (\d+)(/\d+ \(GQA-packed\))?( x \d+ row blocks of \d+)?: over the grid's [\w^-]+ blocks", r"batch \1 x heads \2: @GRID"),
 (r"batch (\d+) x heads (\d+): the grid takes at most [\w^-]+ of each", r"batch \1 x heads \2: @GRID"),
 (r"(sm80|sm80-paged|sm90|sm90-kv|sm100) d(\d+) needs (\d+) bytes", r"@FAM:D\2 needs \3 bytes"),
 (r"sm80-decode d(\d+) needs (\d+) bytes", r"@DEC D\1 needs \2 bytes"),
 (r"(\d+) query tokens( \(max_seqlen_q\))?: takes 17 or more", r"\1 query tokens@VL: takes 17 or more"),
]
def fold_old(s):
    for a, b in subs: s = re.sub(a, b, s)
    for a, b in newgrid: s = re.sub(a, b, s)
    return s
def fold_new(s):
    for a, b in newgrid: s = re.sub(a, b, s)
    return s
seen = collections.Counter(); bad = 0
for base in sorted(glob.glob(sys.argv[1] + "/*-base.txt")):
    new = base.replace("-base.txt", "-new.txt")
    A = open(base).read().splitlines(); B = open(new).read().splitlines()
    assert len(A) == len(B)
    for a, b in zip(A, B):
        if a == b: continue
        fa, fb = a.split(" | "), b.split(" | ")
        # the call, status, backend and kernel (success) and the workspace answer must not change
        sa = a.split(" -> ")[1].split(" | ")[0]; sb = b.split(" -> ")[1].split(" | ")[0]
        if a.split(" -> ")[0] != b.split(" -> ")[0] or sa != sb or (sa == "success" and fa[2:4] != fb[2:4]):
            print("CHOICE DIFFERS", base, "\n<", a, "\n>", b); bad += 1; continue
        wa = [x for x in fa if x.startswith("ws ")]; wb = [x for x in fb if x.startswith("ws ")]
        if wa != wb: print("WS DIFFERS", base, "\n<", a, "\n>", b); bad += 1; continue
        if fold_old(a) != fold_new(b):
            bad += 1
            if bad <= 6: print("TEXT", base, "\n<", fold_old(a)[:1200], "\n>", fold_new(b)[:1200])
            continue
        for a2, b2 in subs:
            if re.search(a2, a): seen[a2] += 1
print("unexplained:", bad); [print(v, k) for k, v in seen.items()]
