"""Forgetting attention (FoX) kernel: speed against PyTorch SDPA and fla, memory on CPU.

On CUDA: forward and forward+backward times of our Triton kernel, PyTorch SDPA causal (no bias,
the floor a biased kernel is measured against) and fla's ``parallel_forgetting_attn`` (when
installed), bf16, per head dim and length, with the ratio to SDPA from the same run; then one
query decoding against a long cache (ours vs SDPA). Targets: forward <= 1.3x SDPA,
forward+backward <= 1.8x. ``--out-json`` writes the rows for scripts/gpu-check.sh.

Without CUDA: the Triton kernels are checked against the reference under the Triton interpreter
at a tiny size, and the blocked CPU path is timed against the reference (full T x T matrix) with
the peak extra memory of each, measured in a fresh child process. GPU numbers need CUDA.

    python benchmarks/forgetting_attention.py                          # CUDA: T = 4k, 16k, 64k; D = 64, 128
    python benchmarks/forgetting_attention.py --lengths 4096 --heads 16 --head-dims 64 --batch 4
    python benchmarks/forgetting_attention.py --cpu-length 8192        # CPU: blocked vs reference
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import resource
import time

import torch

if not torch.cuda.is_available():
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported, for the CPU check

from lm_eval_longmem.kernels.forgetting_attention import biased_attention, forgetting_attention  # noqa: E402


def _inputs(batch, length, heads, head_dim, dtype, device, requires_grad=False, seed=0):
    gen = torch.Generator(device="cpu").manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=gen).to(device=device, dtype=dtype).requires_grad_(requires_grad)

    q, k, v = (rand(batch, length, heads, head_dim) for _ in range(3))
    log_f = torch.nn.functional.logsigmoid(torch.randn(batch, length, heads, generator=gen) + 4.0).to(device)
    return q, k, v, log_f.requires_grad_(requires_grad)


def _candidates():
    """name -> fn(q, k, v, log_f) over [B, T, H, D] tensors."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    found = {
        "sdpa causal": lambda q, k, v, g: sdpa(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        ).transpose(1, 2),
        "ours (triton)": lambda q, k, v, g: forgetting_attention(q, k, v, g, backend="triton"),
    }
    try:
        from fla.ops.forgetting_attn import parallel_forgetting_attn

        found["fla parallel"] = lambda q, k, v, g: parallel_forgetting_attn(q, k, v, g)
    except ImportError:
        pass
    return found


def _cuda_time_ms(fn, warmup=3, repeats=10):
    from triton.testing import do_bench

    return do_bench(fn, warmup=warmup * 25, rep=repeats * 25)


def _forward_backward(fn, q, k, v, g, grad):
    torch.autograd.backward(fn(q, k, v, g), grad)


def run_cuda(args) -> list[dict]:
    dtype = getattr(torch, args.dtype)
    rows = []
    print(f"{'D':>4} {'T':>7} {'kernel':>14} {'fwd ms':>9} {'x sdpa':>7} {'fwd+bwd ms':>11} {'x sdpa':>7}", flush=True)
    for head_dim in args.head_dims:
        for length in args.lengths:
            q, k, v, g = _inputs(args.batch, length, args.heads, head_dim, dtype, "cuda", requires_grad=True)
            grad = torch.randn_like(q)
            timed = {}
            for name, fn in _candidates().items():
                # partials bind this iteration's tensors and are dropped once timed, so the `del`
                # below frees the inputs before the next length
                try:
                    with torch.no_grad():
                        fwd_ms = _cuda_time_ms(functools.partial(fn, q, k, v, g))
                    timed[name] = (fwd_ms, _cuda_time_ms(functools.partial(_forward_backward, fn, q, k, v, g, grad)))
                except Exception as error:  # one failing peer must not hide the others' numbers
                    print(f"{head_dim:>4} {length:>7} {name:>14} failed: {type(error).__name__}: {error}", flush=True)
                    rows.append(
                        dict(
                            kind="prefill",
                            kernel=name,
                            head_dim=head_dim,
                            length=length,
                            error=f"{type(error).__name__}: {error}",
                        )
                    )
            base = timed["sdpa causal"]
            for name, (fwd_ms, both_ms) in timed.items():
                print(
                    f"{head_dim:>4} {length:>7} {name:>14} {fwd_ms:>9.3f} {fwd_ms / base[0]:>7.2f} "
                    f"{both_ms:>11.3f} {both_ms / base[1]:>7.2f}",
                    flush=True,
                )
                rows.append(
                    dict(
                        kind="prefill",
                        kernel=name,
                        head_dim=head_dim,
                        length=length,
                        forward_ms=fwd_ms,
                        forward_x_sdpa=fwd_ms / base[0],
                        forward_backward_ms=both_ms,
                        forward_backward_x_sdpa=both_ms / base[1],
                    )
                )
            del q, k, v, g, grad
        rows += run_decode(args, head_dim, dtype)
        if args.profile:
            rows += _reported(profile_forward, args, head_dim, dtype)
        if args.sweep_configs:
            rows += _reported(sweep_forward_configs, args, head_dim, dtype)
    if args.profile:
        rows += _reported(autotuned_rows)
    return rows


def autotuned_rows() -> list[dict]:
    rows = []
    for key, config in chosen_configs().items():
        print(f"autotuned {key}: {config}", flush=True)
        rows.append(dict(kind="autotuned", kernel=key, config=config))
    return rows


def _reported(step, *args) -> list[dict]:
    """A diagnostic step that fails prints why and leaves the timed rows intact."""
    try:
        return step(*args)
    except Exception as error:
        print(f"{step.__name__} failed: {type(error).__name__}: {error}", flush=True)
        return [dict(kind=step.__name__, error=f"{type(error).__name__}: {error}")]


def chosen_configs() -> dict[str, str]:
    """The autotuner's pick per kernel and key, from this process's launches."""
    from lm_eval_longmem.kernels.forgetting_attention import parallel

    kernels = {
        "forward": parallel.biased_attention_forward_kernel,
        "dq": parallel.biased_attention_dq_kernel,
        "dkdv": parallel.biased_attention_dkdv_kernel,
    }
    return {f"{name} {key}": str(config) for name, kernel in kernels.items() for key, config in kernel.cache.items()}


def profile_forward(args, head_dim, dtype) -> list[dict]:
    """CUDA time per GPU kernel of one forward of ours and of SDPA at the first two lengths
    (torch.profiler), beside the host's wall time per forward: which launches the time goes to,
    and whether the GPU waits on the host, for a forward that misses its target."""
    from torch.profiler import ProfilerActivity, profile

    rows = []
    for length in args.lengths[:2]:
        q, k, v, g = _inputs(args.batch, length, args.heads, head_dim, dtype, "cuda")
        for name, fn in _candidates().items():
            with torch.no_grad():
                for _ in range(3):
                    fn(q, k, v, g)  # compiled, tuned and warm before the profile
                torch.cuda.synchronize()
                start = time.perf_counter()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        fn(q, k, v, g)
                    torch.cuda.synchronize()
                wall_us = (time.perf_counter() - start) / 5 * 1e6
            events = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)
            gpu_us = sum(e.device_time_total for e in events) / 5
            print(
                f"profile D {head_dim} T {length} {name:>14}: "
                f"{gpu_us:>9.1f} us GPU, {wall_us:>9.1f} us wall per forward"
            )
            for event in events[:6]:
                per_call_us = event.device_time_total / 5
                print(f"profile D {head_dim} T {length} {name:>14}: {per_call_us:>9.1f} us/forward  {event.key[:80]}")
                rows.append(
                    dict(
                        kind="profile",
                        kernel=name,
                        head_dim=head_dim,
                        length=length,
                        gpu_kernel=event.key,
                        us_per_forward=per_call_us,
                        gpu_us_per_forward=gpu_us,
                        wall_us_per_forward=wall_us,
                    )
                )
        del q, k, v, g
    return rows


# Forward configs tried beside the autotune list by --sweep-configs: (BLOCK_M, BLOCK_N, warps, stages).
SWEEP_EXTRA = [(128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 4, 2), (128, 64, 8, 4), (64, 128, 4, 2), (64, 64, 4, 4)]


def _config_label(config) -> str:
    return f"{config.kwargs['BLOCK_M']}x{config.kwargs['BLOCK_N']} w{config.num_warps} s{config.num_stages}"


def sweep_forward_configs(args, head_dim, dtype) -> list[dict]:
    """The forward timed with each candidate config forced alone (the autotune list's 16-bit
    prefill configs and SWEEP_EXTRA), at the first two lengths, against SDPA: what tuning can gain."""
    from lm_eval_longmem.kernels.forgetting_attention import parallel
    from lm_eval_longmem.kernels.forgetting_attention.block_configs import _config, configs_for

    kernel = parallel.biased_attention_forward_kernel
    tuned, tuned_cache = kernel.configs, dict(kernel.cache)
    candidates = {_config_label(c): c for c in configs_for(tuned, dtype, head_dim)}
    for choice in SWEEP_EXTRA:
        config = _config(choice, "16-bit", "prefill")
        candidates.setdefault(_config_label(config), config)
    sdpa = _candidates()["sdpa causal"]
    rows = []
    try:
        for length in args.lengths[:2]:
            q, k, v, g = _inputs(args.batch, length, args.heads, head_dim, dtype, "cuda")
            with torch.no_grad():
                base_ms = _cuda_time_ms(functools.partial(sdpa, q, k, v, g))
                for label, config in candidates.items():
                    kernel.configs = [config]
                    kernel.cache.clear()
                    try:
                        ms = _cuda_time_ms(functools.partial(forgetting_attention, q, k, v, g, backend="triton"))
                    except Exception as error:  # e.g. out of shared memory on this device
                        print(f"sweep D {head_dim} T {length} {label}: failed: {type(error).__name__}: {error}")
                        continue
                    print(f"sweep D {head_dim} T {length} {label}: {ms:.3f} ms, {ms / base_ms:.2f}x sdpa", flush=True)
                    rows.append(
                        dict(
                            kind="sweep",
                            head_dim=head_dim,
                            length=length,
                            config=label,
                            forward_ms=ms,
                            x_sdpa=ms / base_ms,
                        )
                    )
            del q, k, v, g
    finally:
        kernel.configs = tuned
        kernel.cache.clear()
        kernel.cache.update(tuned_cache)
    return rows


def run_decode(args, head_dim, dtype) -> list[dict]:
    """One new query against a cache of ``--decode-length`` keys: ours (with FoX's cached c) vs SDPA."""
    q, k, v, g = _inputs(args.batch, args.decode_length, args.heads, head_dim, dtype, "cuda")
    c = torch.cumsum(g, dim=1)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    candidates = {
        "sdpa": lambda: sdpa(q[:, -1:].transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)),
        "ours (triton)": lambda: biased_attention(q[:, -1:], k, v, c[:, -1:], c, backend="triton"),
    }
    with torch.no_grad():
        timed = {name: _cuda_time_ms(fn) for name, fn in candidates.items()}
    rows = []
    for name, ms in timed.items():
        print(
            f"{head_dim:>4} decode 1 vs {args.decode_length} {name:>14} "
            f"{ms * 1000:>9.1f} us {ms / timed['sdpa']:>7.2f}x sdpa",
            flush=True,
        )
        rows.append(
            dict(
                kind="decode",
                kernel=name,
                head_dim=head_dim,
                length=args.decode_length,
                time_ms=ms,
                x_sdpa=ms / timed["sdpa"],
            )
        )
    return rows


def interpreter_check():
    """Tiny Triton-vs-reference check through the interpreter (kernels on CPU tensors)."""
    q, k, v, g = _inputs(2, 48, 4, 32, torch.float32, "cpu", requires_grad=True)
    errors = []
    outputs = {}
    for backend in ("triton", "reference"):
        out = forgetting_attention(q, k, v, g, backend=backend)
        outputs[backend] = [out] + list(torch.autograd.grad(out.square().sum(), [q, k, v, g]))
    for name, a, b in zip(("out", "dq", "dk", "dv", "dlogf"), outputs["triton"], outputs["reference"]):
        errors.append(f"{name} {(a - b).abs().max().item():.1e}")
    print("triton (interpreter) vs reference, max abs error:", ", ".join(errors))


def _child_measure(backend, length, heads, head_dim, with_backward, queue):
    q, k, v, g = _inputs(1, length, heads, head_dim, torch.float32, "cpu", requires_grad=with_backward)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with torch.set_grad_enabled(with_backward):
        out = forgetting_attention(q, k, v, g, backend=backend)
        if with_backward:
            out.sum().backward()
    seconds = time.perf_counter() - start
    queue.put((seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024))


def measure_cpu(backend, length, heads, head_dim, with_backward):
    """(seconds, peak extra bytes) of one call, in a fresh process so peaks do not mix."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child_measure, args=(backend, length, heads, head_dim, with_backward, queue))
    child.start()
    result = queue.get()
    child.join()
    return result


def run_cpu(args):
    head_dim = args.head_dims[0]
    print("No CUDA: GPU timings need a CUDA device.")
    if args.profile or args.sweep_configs:
        print("--profile and --sweep-configs time the compiled kernels: they need CUDA and are skipped here.")
    try:
        interpreter_check()
    except ImportError:
        print("triton not installed: interpreter check skipped")
    for with_backward in (False, True):
        label = "forward+backward" if with_backward else "forward"
        results = {
            b: measure_cpu(b, args.cpu_length, args.heads, head_dim, with_backward) for b in ("blocked", "reference")
        }
        (t_b, m_b), (t_r, m_r) = results["blocked"], results["reference"]
        print(
            f"CPU {label}, B=1 H={args.heads} D={head_dim} T={args.cpu_length} fp32: "
            f"blocked {t_b:.2f} s / {m_b / 2**20:.0f} MiB, reference {t_r:.2f} s / {m_r / 2**20:.0f} MiB; "
            f"time ratio {t_b / t_r:.2f}, memory ratio {m_b / max(m_r, 1):.3f}"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 16384, 65536])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=None, help="default 16 on CUDA, 9 on CPU")
    parser.add_argument("--head-dims", type=int, nargs="+", default=None, help="default 64 128 on CUDA, 64 on CPU")
    parser.add_argument("--decode-length", type=int, default=65536, help="cache length of the one-token decode timing")
    parser.add_argument("--out-json", help="write the CUDA rows (and the device and versions) here")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--cpu-length", type=int, default=2048)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="CUDA: also the GPU time per kernel of one forward at the first two lengths, and the autotuned configs",
    )
    parser.add_argument(
        "--sweep-configs",
        action="store_true",
        help="CUDA: also the forward timed with each candidate block config forced, at the first two lengths",
    )
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    cuda = torch.cuda.is_available()
    args.heads = args.heads or (16 if cuda else 9)
    args.head_dims = args.head_dims or ([64, 128] if cuda else [64])
    if not cuda:
        return run_cpu(args)
    rows = run_cuda(args)
    if args.out_json:
        import json

        import triton

        meta = dict(
            device=torch.cuda.get_device_name(),
            torch=torch.__version__,
            triton=triton.__version__,
            dtype=args.dtype,
            batch=args.batch,
            heads=args.heads,
        )
        with open(args.out_json, "w") as fh:
            json.dump(dict(meta, rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
