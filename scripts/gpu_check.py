"""Run the GPU parts (CUDA tests, kernel speed, every method's speed, a bf16 training step) and
write one report. Called by scripts/gpu-check.sh once the carried wheels are installed.

Each part runs in its own process under a time cap; a part that fails or runs out of time is
reported and the next one still runs. A lent machine answers one command for at most 10 minutes,
so `--only` splits the full run across calls. Writes gpu-report.md, gpu-report.json, gpu-logs.txt
and the CUDA tests' JUnit XML to --out (few files: a device call brings back at most eight).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Part:
    """One step of the check: its command (full and --quick sizes) and its time cap."""

    name: str
    what: str
    command: tuple[str, ...]
    quick: tuple[str, ...]
    cap_seconds: int
    quick_cap_seconds: int
    json_name: str | None = None
    junit_name: str | None = None
    env: dict = field(default_factory=dict)


PYTEST = (
    "-m",
    "pytest",
    "-p",
    "no:cacheprovider",
    "-o",
    "addopts=",
    "-m",
    "not slow",
    "-v",  # one line per finished test: a part stopped at its cap still shows what passed and failed
    "-rfEs",
    "--timeout",
    "600",
)
# Landmark's layer-major scorer against its window-by-window reference (full and quick sizes add lengths)
RETRIEVAL_SPEED = (
    "benchmarks/landmark_retrieval.py",
    *("--device", "cuda", "--heads", "32", "--kv-heads", "8", "--dtype", "bfloat16"),
    *("--out-json", "{out}/retrieval-speed.json"),
)
LANDMARK_PATHS = (
    "benchmarks/method_scoring.py",
    "--device",
    "cuda",
    "--dtype",
    "bfloat16",
    "--methods",
    "landmark",
    "--skip-fox",
    "--landmark-paths",
    "--out-json",
    "{out}/landmark-paths.json",
)
PARTS = (
    Part(
        "cuda-tests",
        "every CUDA test of the fast tier "
        "(compiled Triton, band attention, FoX bf16, bounded caches and Infini on CUDA)",
        (*PYTEST, "-n", "8", "-k", "cuda", "--junitxml", "{out}/cuda-tests.xml", "tests"),
        (*PYTEST, "-n", "8", "-k", "cuda", "--junitxml", "{out}/cuda-tests.xml", "tests"),
        # Measured on an H200 (2026-11-26): 167 s at -n 4 when the kernel gradient tests failed
        # early; the kernel file alone passed 19 of 22 in 185 s at -n 16, compiling every autotune
        # config of the forward, dq and dkdv kernels per dtype and head dim (fp32 the slowest).
        420,
        300,
        junit_name="cuda-tests.xml",
    ),
    Part(
        "kernel-resources",
        "every Triton kernel compiled for sm_80 and sm_90 with this machine's triton: registers, spills, shared "
        "memory, and which GPUs each autotune config fits",
        (
            "benchmarks/kernel_resources.py",
            "--dtypes",
            "bfloat16",
            "float32",
            "--no-padding",
            "--out-json",
            "{out}/kernel-resources.json",
        ),
        ("benchmarks/kernel_resources.py", "--quick", "--out-json", "{out}/kernel-resources.json"),
        240,
        60,
        json_name="kernel-resources.json",
    ),
    Part(
        "kernel-speed",
        "forgetting-attention kernel vs SDPA causal and fla, bf16, B=1 H=16, fwd and fwd+bwd; decode vs a long cache",
        (
            "benchmarks/forgetting_attention.py",
            "--head-dims",
            "64",
            "128",
            "--lengths",
            "4096",
            "16384",
            "65536",
            "--decode-length",
            "65536",
            "--profile",
            "--out-json",
            "{out}/kernel-speed.json",
        ),
        (
            "benchmarks/forgetting_attention.py",
            "--head-dims",
            "64",
            "--lengths",
            "4096",
            "--decode-length",
            "16384",
            "--out-json",
            "{out}/kernel-speed.json",
        ),
        330,
        150,  # compiling and autotuning the D = 64 kernels (ours and fla's) took over 50 s on an H200
        json_name="kernel-speed.json",
    ),
    Part(
        "method-speed",
        "every longmem method's scoring throughput and peak memory on a random-weight ~1B Llama, bf16, "
        "as ratios to vanilla",
        (
            "benchmarks/method_scoring.py",
            "--device",
            "cuda",
            "--dtype",
            "bfloat16",
            "--lengths",
            "4096",
            "16384",
            "--continuation",
            "64",
            "--repeats",
            "3",
            "--profile",  # host- or GPU-bound, at 4k (the part took 155 s on an H100 without it)
            "--stated-step",  # stated-CLM's static step against its chunk runner at 4k, eager and compiled
            "--stated-compiled",
            "--out-json",
            "{out}/method-speed.json",
        ),
        (
            "benchmarks/method_scoring.py",
            "--device",
            "cuda",
            "--dtype",
            "bfloat16",
            "--lengths",
            "2048",
            "--layers",
            "4",
            "--repeats",
            "5",  # at 2 (H200, 2026-11-26) vanilla came out 1.5x slower than pi, which does the same work
            "--out-json",
            "{out}/method-speed.json",
        ),
        720,  # 540 before stated-CLM's compiled step (its first call compiles the 16-layer step and backward)
        60,
        json_name="method-speed.json",
    ),
    Part(
        "landmark-paths",
        "landmark's layer-major scorer against its window-by-window reference and vanilla on the ~1B Llama, "
        "bf16: seconds, ratio to vanilla, ops dispatched and host reads per call",
        (*LANDMARK_PATHS, "--lengths", "4096", "16384", "--continuation", "64", "--repeats", "2"),
        (*LANDMARK_PATHS, "--lengths", "2048", "--layers", "4", "--repeats", "2"),
        360,
        60,
        json_name="landmark-paths.json",
    ),
    Part(
        "recall-speed",
        "LongCache's recall for one layer of the ~1B Llama (32/8 heads, D 64, budget 2048, chunk 512), the Triton "
        "top-keys kernel against the PyTorch path: seconds, ratio, ops, peak memory, the same slots",
        ("benchmarks/recall_top_keys.py", "--device", "cuda", "--out-json", "{out}/recall-speed.json"),
        (
            "benchmarks/recall_top_keys.py",
            "--device",
            "cuda",
            "--lengths",
            "4096",
            "--out-json",
            "{out}/recall-speed.json",
        ),
        120,
        60,
        json_name="recall-speed.json",
    ),
    Part(
        "retrieval-speed",
        "Landmark's retrieval attention for one layer of the ~1B Llama (32/8 heads, D 64, blocks of 64, top_k 5, "
        "windows of 128), bf16, the Triton kernel against the PyTorch path: seconds, ratio, ops, peak memory, "
        "largest difference",
        RETRIEVAL_SPEED,
        (*RETRIEVAL_SPEED, "--lengths", "4096"),
        120,
        60,
        json_name="retrieval-speed.json",
    ),
    Part(
        "train-step",
        "bf16 training steps of the fox and yarn recipe shapes with gradient checkpointing",
        (
            "benchmarks/train_step_gpu.py",
            "--device",
            "cuda",
            "--tokenizer",
            "{wheels}/tokenizer",
            "--out-json",
            "{out}/train-step.json",
        ),
        (
            "benchmarks/train_step_gpu.py",
            "--device",
            "cuda",
            "--tiny",
            "--tokenizer",
            "{wheels}/tokenizer",
            "--out-json",
            "{out}/train-step.json",
        ),
        # H200 (2026-11-26): the fox shape's 3 steps took well under a minute; the 6.9B yarn shape
        # (weights, grads and AdamW state ~110 GB) had not finished its steps when a 300 s cap ran out.
        540,
        90,
        json_name="train-step.json",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: the whole check in about 5 minutes")
    parser.add_argument(
        "--out",
        default=os.environ.get("OUT") or str(REPO / "gpu-report"),
        help="report folder (default $OUT, else ./gpu-report)",
    )
    parser.add_argument(
        "--only",
        default=",".join(p.name for p in PARTS),
        help="comma-separated parts: " + ", ".join(p.name for p in PARTS),
    )
    parser.add_argument("--dry-run", action="store_true", help="list what would run, run nothing")
    return parser


def selected_parts(only: str) -> list[Part]:
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {p.name: p for p in PARTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"error: unknown part(s) {', '.join(unknown)}; valid: {', '.join(known)}")
    return [known[n] for n in names]


def part_argv(part: Part, quick: bool, out: str) -> list[str]:
    """The part's full command line, starting with this interpreter."""
    wheels = str((REPO / os.environ.get("GPU_WHEELS", ".gpu-wheels")).resolve())  # as gpu-check.sh reads it
    argv = part.quick if quick else part.command
    return [sys.executable, *(a.replace("{out}", out).replace("{wheels}", wheels) for a in argv)]


def run_part(part: Part, quick: bool, out: Path) -> dict:
    argv = part_argv(part, quick, str(out))
    cap = part.quick_cap_seconds if quick else part.cap_seconds
    print(f"== {part.name} (cap {cap} s): {shlex.join(argv[1:])}", flush=True)
    start = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **part.env}
    lines: list[str] = []
    with subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    ) as proc:
        timed_out = False
        try:
            for line in _lines_until(proc, start + cap):
                print(line, end="", flush=True)
                lines.append(line)
        except TimeoutError:
            timed_out = True
            os.killpg(proc.pid, 9)
        code = proc.wait()
    result = dict(
        part=part.name,
        what=part.what,
        command=shlex.join(argv[1:]),
        seconds=round(time.monotonic() - start, 1),
        status="timed out" if timed_out else ("ok" if code == 0 else f"failed (exit {code})"),
        log="".join(lines),
    )
    if part.json_name and (out / part.json_name).exists():
        result["data"] = json.loads((out / part.json_name).read_text())
    if part.junit_name and (out / part.junit_name).exists():
        result["tests"] = junit_counts(out / part.junit_name)
    print(f"== {part.name}: {result['status']} in {result['seconds']} s", flush=True)
    return result


def _lines_until(proc, deadline):
    """The process's output lines; TimeoutError once the deadline passes (checked between lines
    and, through a reader thread, while a line is awaited)."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None
        if line is None:
            return
        yield line
        if time.monotonic() > deadline:
            raise TimeoutError


def junit_counts(path: Path) -> dict:
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    counts["failed"] = [
        f"{case.get('classname')}::{case.get('name')}"
        for suite in suites
        for case in suite.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    counts["measured"] = {  # figures the tests recorded with pytest's record_property
        f"{case.get('classname')}::{case.get('name')}": {p.get("name"): p.get("value") for p in props}
        for suite in suites
        for case in suite.iter("testcase")
        for props in case.findall("properties")
    }
    return counts


def environment() -> dict:
    """Device, driver and the versions that matter, read in a child so a broken CUDA cannot stop the check."""
    code = (
        "import json, torch, transformers, importlib.metadata as m\n"
        "v = lambda n: (m.version(n) if n in {d.metadata['Name'].lower() for d in m.distributions()} else None)\n"
        "print(json.dumps(dict(device=torch.cuda.get_device_name() if torch.cuda.is_available() else None,"
        " cuda=torch.version.cuda, torch=torch.__version__, transformers=transformers.__version__,"
        " triton=v('triton'), lm_eval=v('lm_eval'), fla_core=v('fla-core'), accelerate=v('accelerate'), peft=v('peft'),"
        " python=__import__('platform').python_version())))"
    )
    info = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    found = json.loads(info.stdout) if info.returncode == 0 else {"error": info.stderr[-2000:]}
    smi = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
        if _has("nvidia-smi")
        else None
    )
    found["nvidia_smi"] = smi.stdout.strip() if smi and smi.returncode == 0 else None
    found["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return found


def _has(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


def write_report(out: Path, env: dict, results: list[dict], quick: bool) -> None:
    (out / "gpu-report.json").write_text(json.dumps(dict(environment=env, quick=quick, parts=results), indent=1))
    (out / "gpu-logs.txt").write_text("".join(f"===== {r['part']}: {r['command']}\n{r['log']}\n" for r in results))
    lines = [
        "# GPU check",
        "",
        f"{env.get('nvidia_smi') or env.get('device')}; torch {env.get('torch')} (CUDA {env.get('cuda')}), "
        f"transformers {env.get('transformers')}, triton {env.get('triton')}, lm-eval {env.get('lm_eval')}, "
        f"fla-core {env.get('fla_core')}; {env.get('date')}{' (--quick)' if quick else ''}",
        "",
        "| part | status | seconds |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {r['part']} | {r['status']} | {r['seconds']} |" for r in results]
    for r in results:
        lines += ["", f"## {r['part']}", "", r["what"], "", f"`{r['command']}`", ""]
        if "tests" in r:
            t = r["tests"]
            lines.append(f"{t['tests']} tests: {t['failures']} failed, {t['errors']} errors, {t['skipped']} skipped")
            lines += [f"* FAILED {name}" for name in t["failed"]]
            lines += [f"* measured by {name}: {values}" for name, values in t.get("measured", {}).items()]
        tail = r["log"].strip().splitlines()[-25:]
        lines += ["```", *tail, "```"]
    (out / "gpu-report.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    parts = selected_parts(args.only)
    out = Path(args.out)
    if args.dry_run:
        for part in parts:
            cap = part.quick_cap_seconds if args.quick else part.cap_seconds
            print(f"{part.name} (cap {cap} s): {shlex.join(part_argv(part, args.quick, str(out))[1:])}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    print(json.dumps(env), flush=True)
    results = []
    for part in parts:
        results.append(run_part(part, args.quick, out))
        write_report(out, env, results, args.quick)  # after each part: a later time-out keeps what came before
    print((out / "gpu-report.md").read_text())
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
