#!/usr/bin/env python3
"""Gradient buckets of GPT-2 small under data-parallel training, as configs/ddp-gpt2-small.yaml, and
its FSDP units, as configs/fsdp-gpt2-small.yaml.

    python3 scripts/gpt2_buckets.py > configs/ddp-gpt2-small.yaml
    python3 scripts/gpt2_buckets.py --fsdp > configs/fsdp-gpt2-small.yaml

GPT-2 small (124M; Radford et al. 2019, Hugging Face `gpt2`) has these parameter tensors, in the
order of `GPT2LMHeadModel.named_parameters()` (lm_head is tied to wte and not listed):
wte 50257x768, wpe 1024x768; 12 blocks, each ln_1 weight/bias 768, attn.c_attn weight 768x2304 and
bias 2304, attn.c_proj weight 768x768 and bias 768, ln_2 weight/bias 768, mlp.c_fc weight 768x3072
and bias 3072, mlp.c_proj weight 3072x768 and bias 768; ln_f weight/bias 768. 124,439,808 in all.

Bucketing rule (ringrt's model of PyTorch DDP with bucket_cap_mb=25): walk the parameters in reverse
order (the order backward produces their gradients); add each float32 gradient to the open bucket
while the bucket stays at most 25 MiB; otherwise close it and open a new one. A tensor larger than
the cap (wte, 154 MB) gets a bucket of its own. Each bucket is one allreduce per step.

Simplifications against torch.nn.parallel.DistributedDataParallel, kept on purpose so that the test
(test/integration/test_gpt2_workloads.cpp) can recompute the list from the shapes with the same rule:
real DDP closes a bucket once it *reaches* the cap (so buckets may exceed it by one tensor), caps
the first bucket at 1 MiB (dist._DEFAULT_FIRST_BUCKET_BYTES), and rebuilds buckets in gradient-ready
order after the first iteration.

FSDP units (ringrt's model of PyTorch FSDP with a transformer auto-wrap policy on GPT2Block): each block
h.i is one unit whose flat parameter holds its 12 tensors; the root unit holds the rest (wte, wpe,
ln_f). Listed in backward order as the DDP buckets are: h.11 first, ..., h.0, the root last (its
gradients are reduce-scattered last; forward gathers it first). ringrt pads each to a multiple of the
device count at run time, as FSDP pads its flat parameters.
"""
import sys

CAP_BYTES = 25 * 1024 * 1024  # bucket_cap_mb=25
ITEMSIZE = 4  # float32 gradients


def parameters():
    """(name, numel) of every GPT-2 small parameter tensor, in definition order."""
    d, vocab, ctx, layers = 768, 50257, 1024, 12
    params = [("wte", vocab * d), ("wpe", ctx * d)]
    for i in range(layers):
        p = f"h.{i}."
        params += [
            (p + "ln_1.weight", d), (p + "ln_1.bias", d),
            (p + "attn.c_attn.weight", d * 3 * d), (p + "attn.c_attn.bias", 3 * d),
            (p + "attn.c_proj.weight", d * d), (p + "attn.c_proj.bias", d),
            (p + "ln_2.weight", d), (p + "ln_2.bias", d),
            (p + "mlp.c_fc.weight", d * 4 * d), (p + "mlp.c_fc.bias", 4 * d),
            (p + "mlp.c_proj.weight", 4 * d * d), (p + "mlp.c_proj.bias", d),
        ]
    params += [("ln_f.weight", d), ("ln_f.bias", d)]
    return params


def buckets(numels, cap_bytes=CAP_BYTES, itemsize=ITEMSIZE):
    """Element counts of the buckets of `numels` taken in reverse order (see the module comment)."""
    out, open_bytes = [], 0
    for n in reversed(numels):
        if open_bytes and open_bytes + n * itemsize > cap_bytes:
            out.append(open_bytes // itemsize)
            open_bytes = 0
        open_bytes += n * itemsize
    if open_bytes:
        out.append(open_bytes // itemsize)
    return out


def fsdp_units(params):
    """Elements of the FSDP units: the blocks in reverse order, then the root (see the module comment)."""
    blocks = {}
    for name, n in params:
        if name.startswith("h."):
            block = int(name.split(".")[1])
            blocks[block] = blocks.get(block, 0) + n
    root = sum(n for name, n in params if not name.startswith("h."))
    return [blocks[i] for i in sorted(blocks, reverse=True)] + [root]


def wrap(values, per_line=6):
    """The values as the inside of a YAML flow list, per_line to a line."""
    rows = [", ".join(str(v) for v in values[i:i + per_line]) for i in range(0, len(values), per_line)]
    return ",\n     ".join(rows)


def experiment(keys_before, counts, keys_after=()):
    """The YAML both configs share (4 cpu devices, float32 sum, 1 + 5 checked steps) around their keys:
    keys_before, whose last opens the list of counts, and keys_after."""
    lines = ["backend: cpu", "devices:", "  count: 4", "allreduce:", "  ring: 1", "  all2all: 0", "experiment:",
             "  op: sum", "  dtype: float32"]
    lines += ["  " + k for k in keys_before] + [f"    [{wrap(counts)}]"]
    lines += ["  warmup: 1   # steps", "  iters: 5    # steps", "  check: true"] + ["  " + k for k in keys_after]
    return "\n".join(lines)


def print_fsdp(total):
    units = fsdp_units(parameters())
    assert sum(units) == total
    print(f"""# Fully sharded data-parallel training of GPT-2 small (PyTorch FSDP, FULL_SHARD): the {total:,}
# float32 parameters of GPT-2 small in {len(units)} FSDP units, one per transformer block ({units[0]:,} each) and the
# root ({units[-1]:,}: wte, wpe, ln_f), listed in backward order, the root last. Generated by
# scripts/gpt2_buckets.py --fsdp (see there for the rule); do not edit by hand.
# Each unit's flat parameter stays sharded over the devices (padded to a multiple of their count). Every
# step allgathers each unit's parameters in forward (root first), and in backward allgathers each block's
# again (FULL_SHARD frees them after forward; the root's are kept) and reduce-scatters its gradients,
# which are written from the host each step (timed apart). Each row of the table is one collective of a
# step (collective, phase, bucket); the step line gives the time per step (the collectives) and its busbw
# (rccl-tests' factor (n-1)/n for both), then the time of the host writes per step.""")
    print(experiment(["sharding: full_shard   # PyTorch FSDP's ShardingStrategy: full_shard | shard_grad_op "
                      "(no_shard is DDP)",
                      "buckets:   # elements of each FSDP unit's flat parameter, in backward order (the root last)"],
                     units))


def main():
    numels = [n for _, n in parameters()]
    total = sum(numels)
    assert total == 124_439_808, total
    if sys.argv[1:] == ["--fsdp"]:
        print_fsdp(total)
        return
    b = buckets(numels)
    assert sum(b) == total
    print(f"""# Data-parallel training of GPT-2 small: every step allreduces the float32 gradients of its
# {total:,} parameters in {len(b)} buckets of at most 25 MiB (PyTorch DDP bucket_cap_mb=25), in reverse
# parameter order. Generated by scripts/gpt2_buckets.py (see there for the rule); do not edit by hand.
# As DDP does, the buckets are persistent tensors: every step writes each device's fresh gradients into
# them from the host (Tensor::write_shards, timed apart) and allreduces each in place
# (Tensor::allreduce_in_place); in_place: false runs the out-of-place reduce of fixed inputs instead.
# Each row of the table is one bucket; the step line gives the time per step (the allreduces) and its
# busbw, then the time of the host writes per step.""")
    print(experiment(["buckets:   # elements per bucket, in allreduce order"], b,
                     ["in_place: true   # persistent buckets, written from the host and allreduced in place"]))


if __name__ == "__main__":
    main()
