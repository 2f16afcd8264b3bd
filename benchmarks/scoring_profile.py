"""Where one scoring call's time goes: the host or the GPU (torch.profiler).

For a method that misses its speed target: a call is host-bound when the GPU's busy time is a
small part of the wall time, and then the number of kernel launches and of host syncs (each
``.item()``, ``.tolist()`` or data-dependent shape waits for the GPU to drain) says what to cut;
the top host ops say where the Python-side time goes. Used by ``method_scoring.py --profile``.
"""

from __future__ import annotations

import time

from infini_memory import sync  # benchmarks/ is on sys.path when run as a script

# Host calls that block until the GPU catches up (the first three explicitly; the last is every
# device-to-host copy of a tensor's value, e.g. `.item()` or `int(tensor)`).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "aten::_local_scalar_dense")


def profile_scoring(lm, one_request, device: str, top: int = 8) -> dict:
    """Profile one ``_loglikelihood_tokens`` call (after the timed ones, so compiled and warm)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync(device)
    start = time.perf_counter()
    with profile(activities=activities) as prof:
        lm._loglikelihood_tokens([one_request], disable_tqdm=True)
        sync(device)
    wall_s = time.perf_counter() - start
    events = prof.events()
    kernels = [e for e in events if e.device_type == DeviceType.CUDA]
    averages = prof.key_averages()
    host_ops = sorted((e for e in averages if e.key.startswith("aten::")), key=lambda e: -e.self_cpu_time_total)[:top]
    gpu_ops = sorted((e for e in averages if e.self_device_time_total > 0), key=lambda e: -e.self_device_time_total)[
        :top
    ]
    return {
        "wall_s": wall_s,
        "gpu_busy_s": sum(e.device_time for e in kernels) / 1e6,
        "kernel_launches": len(kernels),
        "host_syncs": {name: sum(e.count for e in averages if e.key == name) for name in SYNC_CALLS},
        "top_host_ops": [(e.key, e.count, e.self_cpu_time_total / 1e3) for e in host_ops],
        "top_gpu_kernels": [(e.key[:90], e.count, e.self_device_time_total / 1e3) for e in gpu_ops],
    }


def print_profile(label: str, length: int, found: dict) -> None:
    syncs = ", ".join(f"{name} {count}" for name, count in found["host_syncs"].items() if count)
    print(
        f"  profile {label} T={length}: wall {found['wall_s'] * 1e3:.1f} ms under the profiler, "
        f"GPU busy {found['gpu_busy_s'] * 1e3:.1f} ms, {found['kernel_launches']} kernels; syncs: {syncs or 'none'}",
        flush=True,
    )
    for name, count, ms in found["top_host_ops"]:
        print(f"    host {ms:>9.1f} ms {count:>7} x {name}", flush=True)
    for name, count, ms in found["top_gpu_kernels"]:
        print(f"    gpu  {ms:>9.1f} ms {count:>7} x {name}", flush=True)
