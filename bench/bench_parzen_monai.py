#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_parzen_monai.py: Parzen-window (Mattes) MI value + gradient on the GPU through
dicomhist.torch.MattesMI against MONAI's GlobalMutualInformationLoss (B-spline and Gaussian
kernels), forward + backward on the same batch (issue 22: >= 100x MONAI, memory O(pixels)).

Usage: python3 bench/bench_parzen_monai.py [--reps N] [--order-check]   (needs torch with a GPU,
MONAI and dicomhist on PYTHONPATH; prints a Markdown table naming the GPU, or why it is skipped)

Each case: one fixed image against B moving images (smooth CT-like fields with noise, each a
shifted copy), float32, 64 bins. Ours: MattesMI(64, loss=True)(fixed, moving).sum().backward();
MONAI: GlobalMutualInformationLoss(kernel_type, num_bins=64, reduction="none")(moving, fixed
expanded to the batch).sum().backward(), so both give a loss per item and d loss / d moving.
Time: per call, from CUDA events around `reps` back-to-back calls after three warm-up calls
(the GPU busy throughout, as in an optimizer's loop: a single call timed from an idle GPU adds
the host's launch time and the GPU's ramp from idle, which is what made session 15's 512x512 row
read 0.30 to 1.58 ms); the median of 5 such loops, with the fastest and slowest beside it. Ours
is timed first for every shape, each with its own module, before MONAI's calls (tens of GiB
through the caching allocator) run. Memory: peak allocated by one call above what the inputs
hold (torch.cuda.max_memory_allocated). --order-check also times ours on 16 x 512^2 again after
MONAI's calls, with the module of the 256-pair shape and with a fresh one (session 15's order).
"""
import argparse
import statistics
import sys


def images(torch, batch, side, device):
    """A smooth field with noise as the fixed image, shifted and noised copies as the batch."""
    g = torch.Generator(device="cpu").manual_seed(7)
    y, x = torch.meshgrid(torch.linspace(-1, 1, side), torch.linspace(-1, 1, side), indexing="ij")
    body = ((x / 0.8) ** 2 + (y / 0.6) ** 2 < 1).float()
    field = body * (1000 + 400 * torch.sin(5 * x) * torch.cos(3 * y)) - 1000 * (1 - body)
    fixed = field + 20 * torch.randn(side, side, generator=g)
    shifts = torch.randint(-8, 9, (batch, 2), generator=g)
    moving = torch.stack([torch.roll(field, (int(a), int(b)), (0, 1)) for a, b in shifts])
    moving = moving + 20 * torch.randn(batch, side, side, generator=g)
    return fixed.to(device), moving.to(device)


def timed(torch, step, reps, loops=5):
    """(median, fastest, slowest) ms per call of `step` (which must leave its work on the current
    stream) over `loops` loops of `reps` back-to-back calls, and the peak MiB of one call."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    times = []
    for _ in range(loops):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return (statistics.median(times), min(times), max(times)), peak


def ours_step(torch, dt, fixed, moving, module=None):
    """One forward + backward of MattesMI(64, loss=True) on a copy of moving that wants grad."""
    mov = moving.clone().requires_grad_(True)
    fn = module if module is not None else dt.MattesMI(64, loss=True)

    def step():
        mov.grad = None
        fn(fixed, mov).sum().backward()

    return step, fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--order-check", action="store_true")
    args = ap.parse_args()
    try:
        import torch
        from monai.losses import GlobalMutualInformationLoss
        import dicomhist.torch as dt
    except ImportError as e:
        print(f"bench_parzen_monai: skipped ({e})")
        return 0
    if not torch.cuda.is_available():
        print("bench_parzen_monai: skipped (PyTorch sees no GPU)")
        return 0
    dev = "cuda"
    import monai
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, MONAI "
          f"{monai.__version__}; float32 pairs, 64 bins, forward + backward, median of "
          f"{args.reps} calls\n")
    print("| pairs | batch | ours ms (fastest-slowest) | ours evals/s | ours peak MiB | "
          "MONAI kernel | MONAI ms | MONAI evals/s | MONAI peak MiB | ours faster |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shapes = ((256, 256), (16, 512))
    ours, modules = {}, {}
    for batch, side in shapes:  # ours first, each shape with its own module
        fixed, moving = images(torch, batch, side, dev)
        step, modules[batch, side] = ours_step(torch, dt, fixed, moving)
        ours[batch, side] = timed(torch, step, args.reps)
        del step
    for batch, side in shapes:
        fixed, moving = images(torch, batch, side, dev)
        (t_ours, lo, hi), m_ours = ours[batch, side]
        spread = f"{t_ours:.3f} ({lo:.3f}-{hi:.3f})"
        target = fixed.expand(batch, 1, side, side)
        for kernel in ("b-spline", "gaussian"):
            loss = GlobalMutualInformationLoss(kernel_type=kernel, num_bins=64,
                                               reduction="none").to(dev)
            pred = moving[:, None].clone().requires_grad_(True)

            def theirs():
                pred.grad = None
                loss(pred, target).sum().backward()

            try:
                (t_m, _, _), m_m = timed(torch, theirs, max(2, args.reps // 5), loops=3)
            except torch.cuda.OutOfMemoryError:
                print(f"| {side}x{side} | {batch} | {spread} | {batch / t_ours * 1e3:.3g} | "
                      f"{m_ours:.0f} | {kernel} | out of memory | - | - | - |")
                del theirs, loss, pred
                torch.cuda.empty_cache()
                continue
            print(f"| {side}x{side} | {batch} | {spread} | {batch / t_ours * 1e3:.3g} | "
                  f"{m_ours:.0f} | {kernel} | {t_m:.1f} | {batch / t_m * 1e3:.3g} | {m_m:.0f} | "
                  f"{t_m / t_ours:.0f}x |", flush=True)
            del theirs, loss, pred
            torch.cuda.empty_cache()
    if args.order_check:  # session 15's order: ours on 16 x 512^2 after MONAI's calls
        fixed, moving = images(torch, 16, 512, dev)
        print("\n| ours, 16 x 512x512, forward + backward | ms per call (fastest-slowest) |")
        print("|---|---|")
        (t, lo, hi), _ = ours[16, 512]
        print(f"| before MONAI, its own module | {t:.3f} ({lo:.3f}-{hi:.3f}) |")
        for name, module in (("after MONAI, the 256-pair shape's module",
                              modules[256, 256]),
                             ("after MONAI, a fresh module", None)):
            step, _ = ours_step(torch, dt, fixed, moving, module)
            (t, lo, hi), _ = timed(torch, step, args.reps)
            print(f"| {name} | {t:.3f} ({lo:.3f}-{hi:.3f}) |")
        # session 15's timing: one call from an idle GPU per sample, median of reps
        step, _ = ours_step(torch, dt, fixed, moving)
        step()
        one = []
        for _ in range(args.reps):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            one.append(start.elapsed_time(end))
        print(f"| after MONAI, one call from an idle GPU (session 15's timing), median of "
              f"{args.reps} | {statistics.median(one):.3f} ({min(one):.3f}-{max(one):.3f}) |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
