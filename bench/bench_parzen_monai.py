#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_parzen_monai.py: Parzen-window (Mattes) MI value + gradient on the GPU through
dicomhist.torch.MattesMI against MONAI's GlobalMutualInformationLoss (B-spline and Gaussian
kernels), forward + backward on the same batch (issue 22: >= 100x MONAI, memory O(pixels)).

Usage: python3 bench/bench_parzen_monai.py [--reps N]   (needs torch with a GPU, MONAI and
dicomhist on PYTHONPATH; prints a Markdown table naming the GPU, or why it is skipped)

Each case: one fixed image against B moving images (smooth CT-like fields with noise, each a
shifted copy), float32, 64 bins. Ours: MattesMI(64, loss=True)(fixed, moving).sum().backward();
MONAI: GlobalMutualInformationLoss(kernel_type, num_bins=64, reduction="none")(moving, fixed
expanded to the batch).sum().backward(), so both give a loss per item and d loss / d moving.
Time: median of CUDA-event-timed calls after a warm-up; memory: peak allocated by the call above
what the inputs hold (torch.cuda.max_memory_allocated).
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


def timed(torch, step, reps):
    """Median ms of `step` (which must leave its work on the current stream), peak MiB."""
    step()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), (torch.cuda.max_memory_allocated() - base) / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
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
    print("| pairs | batch | ours ms | ours evals/s | ours peak MiB | MONAI kernel | MONAI ms | "
          "MONAI evals/s | MONAI peak MiB | ours faster |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ours_fn = dt.MattesMI(64, loss=True)
    for batch, side in ((256, 256), (16, 512)):
        fixed, moving = images(torch, batch, side, dev)
        mov = moving.clone().requires_grad_(True)

        def ours():
            mov.grad = None
            ours_fn(fixed, mov).sum().backward()

        t_ours, m_ours = timed(torch, ours, args.reps)
        target = fixed.expand(batch, 1, side, side)
        for kernel in ("b-spline", "gaussian"):
            loss = GlobalMutualInformationLoss(kernel_type=kernel, num_bins=64,
                                               reduction="none").to(dev)
            pred = moving[:, None].clone().requires_grad_(True)

            def theirs():
                pred.grad = None
                loss(pred, target).sum().backward()

            try:
                t_m, m_m = timed(torch, theirs, max(3, args.reps // 3))
            except torch.cuda.OutOfMemoryError:
                print(f"| {side}x{side} | {batch} | {t_ours:.3f} | {batch / t_ours * 1e3:.3g} | "
                      f"{m_ours:.0f} | {kernel} | out of memory | - | - | - |")
                torch.cuda.empty_cache()
                continue
            print(f"| {side}x{side} | {batch} | {t_ours:.3f} | {batch / t_ours * 1e3:.3g} | "
                  f"{m_ours:.0f} | {kernel} | {t_m:.1f} | {batch / t_m * 1e3:.3g} | {m_m:.0f} | "
                  f"{t_m / t_ours:.0f}x |")
            del loss, pred
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
