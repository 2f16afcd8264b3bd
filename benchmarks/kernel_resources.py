"""Every tiled Triton kernel of the package (forgetting attention's four, the grouped softmax's
two, Landmark's retrieval attention, LongCache's recall; not the split-decoding merge, one small row per program
with no tiles to spill) compiled ahead of time for sm_80 and sm_90, with no GPU: registers,
spill (stack) bytes and shared memory per autotune config (or per launch, for the grouped
softmax's row kernels, whose warps grow with the row), and which GPUs each fits.

A GPU is rarely lent to this project, so what only a compile shows (a config that spills, one that
needs more shared memory than a device has, a kernel that no longer compiles) is found here. The
launch arguments are not written by hand: the real autograd wrapper (`forgetting_attention/parallel.py`) runs on
CPU tensors with every kernel launch intercepted, so each compile is specialised exactly as a launch
with such tensors would be (triton's own argument binder: dtypes, 16-byte alignment, constexprs).
Then every autotune config of each captured launch is compiled with the ptxas inside the triton
wheel, and `cuobjdump --dump-resource-usage` reads registers and stack from the cubin.

    python benchmarks/kernel_resources.py                   # the full matrix (about half an hour on 2 cores)
    python benchmarks/kernel_resources.py --quick           # default configs, bf16 and fp32, D 128; 2 grouped rows
    python benchmarks/kernel_resources.py --write-docs docs/kernels.md

Exits non-zero when any kernel fails to compile.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

# Shared memory a block may use (bytes), from the CUDA programming guide's compute-capability table.
SHARED_MEMORY_LIMIT = {"A100 (sm_80)": 166_912, "H100/H200 (sm_90)": 232_448, "sm_86/sm_89": 101_376}
# The compile whose shared memory decides each device (sm_86/89 read off the sm_80 compile).
LIMIT_TARGET = {"A100 (sm_80)": 80, "H100/H200 (sm_90)": 90, "sm_86/sm_89": 80}
ATTENTION_KERNELS = ("forward", "delta", "dq", "dkdv")  # as captured_launches names them
GROUPED_KERNELS = ("gs_forward", "gs_backward")  # Landmark Attention's grouped softmax
RETRIEVAL_KERNELS = ("retrieval",)  # and its retrieval attention (blocks read from the store by index)
RECALL_KERNELS = ("recall",)  # LongCache's recall: each query's best keys (kernels/top_keys)
KERNELS = ATTENTION_KERNELS + GROUPED_KERNELS + RETRIEVAL_KERNELS + RECALL_KERNELS
# Retrieval attention's block sizes: the study's 64 and the released weights' 51 (top_k 5, windows of 128).
RETRIEVAL_BLOCKS = (64, 51)
# Grouped-softmax score rows (keys, block size): the study's (512 + 6 x 64 keys: a 16x64 tile), the
# released weights' blocks of 51 (no vector loads: not a multiple of 16) and the longest row the
# dispatcher sends to Triton for each (dispatch.max_tile: 64x64 and 256x64). 128 queries, a window's worth.
GROUPED_ROWS = ((896, 64), (818, 51), (3264, 51), (16384, 64))
DOCS_START, DOCS_END = "<!-- kernel-resources:start -->", "<!-- kernel-resources:end -->"


@dataclass(frozen=True)
class Shape:
    """One call of the attention wrapper: queries against keys, with or without a key window."""

    head_dim: int
    dtype: str
    window: bool = False  # left padding: the kernels' HAS_WINDOW specialisation
    decode: bool = False  # one query against the keys (Tq = 1): the decoding launch

    @property
    def name(self) -> str:
        return ("decode" if self.decode else "prefill") + (" +padding" if self.window else "")


@dataclass(frozen=True)
class GroupedShape:
    """One grouped-softmax call: 128 query rows of ``keys`` scores in blocks of ``block_size``."""

    keys: int
    block_size: int
    dtype: str
    head_dim: int = 0  # no head dim: the kernels see scores

    @property
    def name(self) -> str:
        from lm_eval_longmem.kernels.grouped_softmax.triton_function import tile_shape

        blocks, pad = tile_shape(self.keys, self.block_size)
        return f"{self.keys} keys, B {self.block_size} ({blocks}x{pad})"


@dataclass(frozen=True)
class RetrievalShape:
    """One retrieval-attention call: a window of 128 queries, top_k 5 blocks of ``block_size``."""

    head_dim: int
    block_size: int
    dtype: str

    @property
    def name(self) -> str:
        return f"k 5, B {self.block_size}, W 128"


@dataclass(frozen=True)
class RecallShape:
    """One recall call: 512 queries (a chunk) against 2,048 keys, top_k 4; scored in float32 whatever
    the model's dtype (the recall turns queries and keys to float32 first)."""

    head_dim: int
    dtype: str = "float32"

    @property
    def name(self) -> str:
        return "k 4, 512 x 2048"


@dataclass
class Row:
    kernel: str
    shape: str
    head_dim: int
    dtype: str
    config: str
    target: int
    registers: int = 0
    stack_bytes: int = 0
    shared_bytes: int = 0
    estimated_shared_bytes: int | None = None  # what the autotune pruner expects
    seconds: float = 0.0
    error: str = ""


def captured_launches(
    shape: Shape | GroupedShape | RetrievalShape | RecallShape,
) -> list[tuple[str, object, tuple, dict]]:
    """``(name, kernel, args, kwargs)`` of every launch one forward and backward make."""
    if isinstance(shape, GroupedShape):
        return _grouped_softmax_launches(shape)
    if isinstance(shape, RetrievalShape):
        return _retrieval_launches(shape)
    if isinstance(shape, RecallShape):
        return _recall_launches(shape)
    return _attention_launches(shape)


def _intercepted(kernels: dict, call) -> list[tuple[str, object, tuple, dict]]:
    """Runs ``call()`` with each kernel's launch recorded instead of run."""
    launches = []
    saved = {name: kernel.__dict__.get("run") for name, kernel in kernels.items()}
    for name, kernel in kernels.items():
        kernel.run = lambda *args, _name=name, _kernel=kernel, grid=None, warmup=False, **kwargs: launches.append(
            (_name, _kernel, args, kwargs)
        )
    try:
        call()
    finally:
        for name, kernel in kernels.items():
            if saved[name] is None:
                del kernel.run
            else:
                kernel.run = saved[name]
    return launches


def _attention_launches(shape: Shape) -> list[tuple[str, object, tuple, dict]]:
    import torch

    from lm_eval_longmem.kernels.forgetting_attention import parallel as launcher
    from lm_eval_longmem.kernels.forgetting_attention.common import key_window_bounds

    kernels = {
        "forward": launcher.biased_attention_forward_kernel,
        "delta": launcher.output_dot_grad_kernel,
        "dq": launcher.biased_attention_dq_kernel,
        "dkdv": launcher.biased_attention_dkdv_kernel,
    }

    def forward_and_backward():
        batch, heads, keys = 2, 4, 1024
        queries = 1 if shape.decode else keys
        dtype = getattr(torch, shape.dtype)
        q = torch.zeros(batch, queries, heads, shape.head_dim, dtype=dtype, requires_grad=True)
        k, v = (torch.zeros(batch, keys, heads // 2, shape.head_dim, dtype=dtype, requires_grad=True) for _ in "kv")
        q_bias = torch.zeros(batch, queries, heads, requires_grad=True)
        k_bias = torch.zeros(batch, keys, heads, requires_grad=True)
        seq_start = torch.tensor([0, 100]) if shape.window else None
        bounds = key_window_bounds(batch, queries, keys, seq_start, None, q.device)
        out = launcher.triton_biased_attention(q, k, v, q_bias, k_bias, shape.head_dim**-0.5, bounds)
        out.backward(torch.zeros_like(out))

    return _intercepted(kernels, forward_and_backward)


def _grouped_softmax_launches(shape: GroupedShape) -> list[tuple[str, object, tuple, dict]]:
    import torch

    from lm_eval_longmem.kernels.grouped_softmax import triton_function as launcher

    kernels = {
        "gs_forward": launcher.grouped_softmax_forward_kernel,
        "gs_backward": launcher.grouped_softmax_backward_kernel,
    }

    def forward_and_backward():
        scores = torch.zeros(1, 2, 128, shape.keys, dtype=getattr(torch, shape.dtype), requires_grad=True)
        weights = launcher.triton_grouped_softmax(scores, shape.block_size)
        weights.backward(torch.zeros_like(weights))

    return _intercepted(kernels, forward_and_backward)


def _retrieval_launches(shape: RetrievalShape) -> list[tuple[str, object, tuple, dict]]:
    import torch

    from lm_eval_longmem.kernels.grouped_softmax import retrieval_triton as launcher

    heads, kv_heads, window, k, blocks = 4, 2, 128, 5, 8
    dtype, d = getattr(torch, shape.dtype), shape.head_dim

    def forward():
        launcher.triton_retrieval_attention(
            torch.zeros(heads, window, k, d, dtype=dtype),
            torch.zeros(heads, window, d, dtype=dtype),
            torch.zeros(kv_heads, window, d, dtype=dtype),
            torch.zeros(kv_heads, window, d, dtype=dtype),
            torch.zeros(kv_heads, blocks, shape.block_size, d, dtype=dtype),
            torch.zeros(kv_heads, blocks, shape.block_size, d, dtype=dtype),
            torch.zeros(heads, window, k, dtype=torch.long),
            torch.ones(heads, window, k, dtype=torch.bool),
            window,
            d**-0.5,
            None,
        )

    return _intercepted({"retrieval": launcher.retrieval_attention_kernel}, forward)


def _recall_launches(shape: RecallShape) -> list[tuple[str, object, tuple, dict]]:
    import torch

    from lm_eval_longmem.kernels.top_keys import triton_top_keys as launcher

    heads, kv_heads, queries, keys = 4, 2, 512, 2048

    def forward():
        launcher.triton_top_keys(
            torch.zeros(heads, queries, shape.head_dim),
            torch.zeros(kv_heads, keys, shape.head_dim),
            torch.full((queries,), keys),
            4,
        )

    return _intercepted({"recall": launcher.top_keys_kernel}, forward)


def _config_label(config, kwargs: dict) -> str:
    if config is None:  # a kernel without autotuning: the warps its launch asks for, if any
        return "fixed" + (f" w{kwargs['num_warps']}" if "num_warps" in kwargs else "")
    blocks = "x".join(str(v) for v in config.kwargs.values())
    return f"{blocks} w{config.num_warps} s{config.num_stages}"


def compile_one(kernel, args: tuple, kwargs: dict, config, target_arch: int) -> tuple[int, int, int]:
    """``(registers, stack bytes, shared bytes)`` of one kernel/config compiled for ``sm_<arch>``."""
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as triton_compile
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    fn = kernel.fn if config is not None else kernel
    options = dict(kwargs)
    if config is not None:
        options.update(config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
    target = GPUTarget("cuda", target_arch, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound_args, specialization, parsed = binder(*args, **options)
    parsed, signature, constexprs, attrs = fn._pack_args(backend, options, bound_args, specialization, parsed)
    compiled = triton_compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=parsed.__dict__)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        usage = subprocess.run(
            [knobs.nvidia.cuobjdump.path, "--dump-resource-usage", cubin.name], capture_output=True, text=True
        ).stdout
    found = dict(re.findall(r"\b(REG|STACK):(\d+)", usage))
    return int(found["REG"]), int(found["STACK"]), int(compiled.metadata.shared)


def _compile_task(task) -> Row:
    shape, kernel_name, config_index, target = task
    name, kernel, args, kwargs = next(launch for launch in captured_launches(shape) if launch[0] == kernel_name)
    config = kernel.configs[config_index] if config_index is not None else None
    row = Row(name, shape.name, shape.head_dim, shape.dtype, _config_label(config, kwargs), target)
    row.estimated_shared_bytes = estimated_shared_bytes(kernel, config, shape)
    start = time.perf_counter()
    try:
        row.registers, row.stack_bytes, row.shared_bytes = compile_one(kernel, args, kwargs, config, target)
    except Exception as err:  # noqa: BLE001  (a kernel that does not compile is this row's result)
        row.error = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"[:300]
    row.seconds = round(time.perf_counter() - start, 1)
    return row


def config_indices(kernel, shape: Shape, default_only: bool) -> list[int]:
    """Positions in ``kernel.configs`` of the candidates the autotuner considers for this shape's
    dtype and head dim (the device-independent part of its pruning)."""
    import torch

    from lm_eval_longmem.kernels.forgetting_attention.block_configs import configs_for

    meant = configs_for(kernel.configs, getattr(torch, shape.dtype), shape.head_dim, decode=shape.decode)
    indices = [i for i, config in enumerate(kernel.configs) if any(config is c for c in meant)]
    return indices[:1] if default_only else indices


def estimated_shared_bytes(kernel, config, shape: Shape) -> int | None:
    """The shared memory the kernel's autotune pruner expects of this config (None for a kernel
    without one)."""
    import torch

    estimate = getattr(getattr(kernel, "early_config_prune", None), "shared_bytes", None)
    if estimate is None or config is None:
        return None
    elem = torch.empty(0, dtype=getattr(torch, shape.dtype)).element_size()
    blocks = config.kwargs
    return estimate(blocks["BLOCK_M"], blocks["BLOCK_N"], shape.head_dim, config.num_stages, elem)


def tasks_for(shapes: list[Shape], kernels: list[str], default_only: bool, targets: list[int]) -> list[tuple]:
    tasks = []
    for shape in shapes:
        for name, kernel, _args, _kwargs in captured_launches(shape):
            if name not in kernels:
                continue
            configs = [None] if not hasattr(kernel, "configs") else config_indices(kernel, shape, default_only)
            tasks += [(shape, name, index, target) for index, target in itertools.product(configs, targets)]
    return tasks


def fits(rows: list[Row], row: Row) -> dict[str, bool | None]:
    """Whether the config of ``row`` fits each device's shared memory, from the compile for that
    device's target (None where that target was not compiled)."""
    verdict = {}
    for device, limit in SHARED_MEMORY_LIMIT.items():
        same = [
            r
            for r in rows
            if (r.kernel, r.shape, r.head_dim, r.dtype, r.config, r.target)
            == (row.kernel, row.shape, row.head_dim, row.dtype, row.config, LIMIT_TARGET[device])
            and not r.error
        ]
        verdict[device] = same[0].shared_bytes <= limit if same else None
    return verdict


def _resources(row: Row | None) -> str:
    if row is None:
        return "-"
    if row.error:
        return f"failed: {row.error}"
    return f"{row.registers} / {row.stack_bytes} / {row.shared_bytes / 1024:.1f}"


def markdown(rows: list[Row]) -> str:
    devices = list(SHARED_MEMORY_LIMIT)
    lines = [
        "| kernel | shape | D | dtype | config (blocks, warps, stages) | sm_80 regs / spill B / shared KB "
        "| sm_90 regs / spill B / shared KB | pruner's estimate KB | "
        + " | ".join(f"fits {d}" for d in devices)
        + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(devices),
    ]
    keyed = {}
    for r in rows:
        keyed.setdefault((r.kernel, r.shape, r.head_dim, r.dtype, r.config), {})[r.target] = r
    for (kernel, shape, head_dim, dtype, config), by_target in keyed.items():
        first = next(iter(by_target.values()))
        estimate = "-" if first.estimated_shared_bytes is None else f"{first.estimated_shared_bytes / 1024:.1f}"
        verdict = fits(rows, first)
        marks = ["-" if verdict[d] is None else "yes" if verdict[d] else "**no**" for d in devices]
        lines.append(
            f"| {kernel} | {shape} | {head_dim or '-'} | {dtype} | {config} | {_resources(by_target.get(80))} "
            f"| {_resources(by_target.get(90))} | {estimate} | " + " | ".join(marks) + " |"
        )
    return "\n".join(lines)


def reproducing_args(argv: list[str]) -> list[str]:
    """The command line less what does not change the table (`--jobs N`, `--out-json PATH`)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--jobs", "--out-json"):
            skip = True
        elif not arg.startswith(("--jobs=", "--out-json=")):
            kept.append(arg)
    return kept


def grouped_row(text: str) -> tuple[int, int]:
    """``KEYS:BLOCK`` of ``--grouped-rows``."""
    try:
        keys, block = (int(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KEYS:BLOCK such as 896:64, got {text!r}") from None
    if keys < 1 or block < 2:
        raise argparse.ArgumentTypeError(f"expected at least 1 key and blocks of at least 2, got {text!r}")
    return keys, block


def write_docs(path: str, table: str, header: str) -> None:
    text = open(path, encoding="utf-8").read()
    if DOCS_START not in text or DOCS_END not in text:
        raise SystemExit(f"error: {path} has no {DOCS_START} ... {DOCS_END} markers to write the table between")
    before, rest = text.split(DOCS_START, 1)
    after = rest.split(DOCS_END, 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{before}{DOCS_START}\n{header}\n\n{table}\n{DOCS_END}{after}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="default configs only, bf16 and fp32, D 128, no padding")
    parser.add_argument("--head-dims", type=int, nargs="+", default=None, choices=[16, 32, 64, 128])
    parser.add_argument("--dtypes", nargs="+", default=None, choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--targets", type=int, nargs="+", default=[80, 90], choices=[80, 86, 89, 90])
    parser.add_argument("--default-config-only", action="store_true", help="each kernel's first autotune config")
    parser.add_argument("--no-padding", action="store_true", help="leave out the padded (HAS_WINDOW) shapes")
    parser.add_argument("--no-decode", action="store_true", help="leave out the one-query (decode) shapes")
    parser.add_argument(
        "--grouped-rows",
        nargs="+",
        type=grouped_row,
        default=None,
        metavar="KEYS:BLOCK",
        help=f"grouped-softmax score rows (default: {' '.join(f'{k}:{b}' for k, b in GROUPED_ROWS)})",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out-json", default="")
    parser.add_argument("--write-docs", default="", help="write the table between the markers of this Markdown file")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes"):
        raise SystemExit("error: unset TRITON_INTERPRET: this compiles the kernels, it does not interpret them")
    if args.quick:
        args.head_dims = args.head_dims or [128]
        args.dtypes = args.dtypes or ["bfloat16", "float32"]
        args.default_config_only, args.no_padding, args.no_decode = True, True, True
        args.grouped_rows = args.grouped_rows or [GROUPED_ROWS[0], GROUPED_ROWS[-1]]
    head_dims, dtypes = args.head_dims or [64, 128], args.dtypes or ["bfloat16", "float16", "float32"]
    shapes = [
        Shape(d, t, window, decode)
        for d, t in itertools.product(head_dims, dtypes)
        for window, decode in [(False, False), (True, False), (False, True)]
        if not (window and args.no_padding) and not (decode and args.no_decode)
    ]
    shapes += [
        GroupedShape(keys, block, t)
        for (keys, block), t in itertools.product(args.grouped_rows or GROUPED_ROWS, dtypes)
    ]
    shapes += [RetrievalShape(d, b, t) for d, b, t in itertools.product(head_dims, RETRIEVAL_BLOCKS, dtypes)]
    shapes += [RecallShape(d) for d in head_dims]
    tasks = tasks_for(shapes, args.kernels, args.default_config_only, args.targets)
    print(f"compiling {len(tasks)} kernel/config/target combinations on {args.jobs} processes", flush=True)
    start = time.perf_counter()
    rows = []
    # spawn, not fork: a forked child of a process that has run torch and triton can hang
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for row in pool.map(_compile_task, tasks):
            rows.append(row)
            status = row.error or f"{row.registers} regs, {row.stack_bytes} B stack, {row.shared_bytes} B shared"
            where = f"sm_{row.target} {row.kernel:8} {row.shape:17} D{row.head_dim} {row.dtype:8} {row.config}"
            print(f"  {where}: {status}", flush=True)
    elapsed = time.perf_counter() - start
    table = markdown(rows)
    print(table)
    import triton

    command = " ".join(
        ["python benchmarks/kernel_resources.py", *reproducing_args(sys.argv[1:] if argv is None else argv)]
    )
    header = (
        f"Compiled ahead of time with triton {triton.__version__} on the CPU (no GPU), {len(rows)} compiles "
        f"({elapsed * args.jobs / 60:.0f} CPU-minutes): `{command}`. Forgetting attention: prefill and, unless "
        "left out, padded prefill and decode (one query, not split because these launches keep gradients), only "
        "the configs the autotuner considers for each dtype, head dim and phase. Grouped softmax: 128 query rows "
        "of each row length (shape: keys, block size, the [blocks, B] tile). Retrieval attention: a window of 128 "
        "queries, top_k 5, blocks of 64 and 51, per head dim and dtype. Spill B is the stack frame ptxas "
        "reserves (local-memory spills). sm_80 compiles need less shared memory than sm_90 ones; the pruner's "
        "estimate follows the sm_90 layout, so it is conservative on sm_80 and sm_86/89."
    )
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=1)
    if args.write_docs:
        write_docs(args.write_docs, table, header)
    failed = [r for r in rows if r.error]
    for r in failed:
        where = f"{r.kernel} ({r.shape}, D{r.head_dim}, {r.dtype}, {r.config})"
        print(f"error: {where} failed for sm_{r.target}: {r.error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
