"""Cold import of every Lambda handler beside a bare ``import boto3``, in one run.

Run: ``.venv/bin/python bench/cold_start.py [--quick] [--runs N]``. Each measurement is a
fresh interpreter (a subprocess, as a new Lambda execution environment is) that times the
one import statement with ``perf_counter`` and reports its peak RSS; interpreter start-up
is outside the timed region. The subjects run round-robin, N rounds (default 9), so a
load spike on the machine hits them all alike; the table shows medians and the ratio to
the median of the bare ``import boto3`` measured in the same rounds.

Two environments, as in Lambda: ``LAMBDA_TASK_ROOT`` set, so Powertools' Tracer is on and
the X-Ray SDK sees Lambda (the stack sets active tracing), and the same with
``POWERTOOLS_TRACE_DISABLED=true`` (what tracing costs at import is the difference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from harness import machine, table

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "boto3"
TOOL_HANDLERS = ("search", "get", "capture", "request_admission", "withdraw", "forget")
OTHER_HANDLERS = ("mcp_endpoint", "host_api", "projector", "confirmation_notifier",
                  "expiry_sweeper")
FLOORS = ("floors.tool_stack", "floors.endpoint_stack")
GOALS = {"mcp_endpoint": 3.0, **{tool: 1.5 for tool in TOOL_HANDLERS}}

# The child: time one import, print {"ms": ..., "rss_mib": ...}. VmHWM is the child's own
# peak (getrusage's ru_maxrss would survive exec and report the parent's size).
_CHILD = """
import json, sys, time, importlib
start = time.perf_counter()
importlib.import_module(sys.argv[1])
ms = (time.perf_counter() - start) * 1000
rss = 0.0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        rss = int(line.split()[1]) / 1024
print(json.dumps({"ms": ms, "rss_mib": rss}))
"""


def lambda_environment(tracing: bool) -> dict[str, str]:
    """The environment of a deployed function, minus AWS credentials (none are read)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("POWERTOOLS_", "AWS_", "ENGRAM_"))}
    env.update({
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "shared"), str(ROOT / "bench")]),
        "LAMBDA_TASK_ROOT": str(ROOT),
        "AWS_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "engram-cold-start-bench",
        "POWERTOOLS_SERVICE_NAME": "engram-memory",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env


def module_of(subject: str) -> str:
    """The module a subject imports."""
    if subject == BASELINE or subject in FLOORS:
        return subject
    return f"functions.{subject}.handler"


def measure_once(subject: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh interpreter importing ``subject``."""
    out = subprocess.run([sys.executable, "-c", _CHILD, module_of(subject)], env=env,
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


Samples = dict[str, list[dict[str, float]]]


def measure(subjects: list[str], runs: int, env: dict[str, str]) -> Samples:
    """``runs`` round-robin rounds over every subject."""
    samples: Samples = {subject: [] for subject in subjects}
    for _ in range(runs):
        for subject in subjects:
            samples[subject].append(measure_once(subject, env))
    return samples


def rows(samples: Samples) -> list[list[object]]:
    """One row per subject: median ms, ratio to boto3, goal, peak RSS."""
    base = statistics.median(s["ms"] for s in samples[BASELINE])
    out: list[list[object]] = []
    for subject, runs in samples.items():
        ms = statistics.median(s["ms"] for s in runs)
        goal = GOALS.get(subject)
        ratio = ms / base
        verdict = "" if goal is None else ("met" if ratio <= goal else "NOT met")
        out.append([module_of(subject), ms, ratio, f"≤ {goal:g}×" if goal else "",
                    verdict, statistics.median(s["rss_mib"] for s in runs)])
    return out


def main() -> None:
    """Measure both environments and print one table each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (1 round, 3 subjects)")
    parser.add_argument("--runs", type=int, default=9)
    options = parser.parse_args()
    subjects = [BASELINE, *FLOORS, *TOOL_HANDLERS, *OTHER_HANDLERS]
    if options.quick:
        subjects = [BASELINE, "capture", "mcp_endpoint"]
    runs = 1 if options.quick else options.runs
    print(f"cold import: fresh interpreter per import, {runs} round-robin rounds, median; "
          f"{machine()}")
    for tracing in (True, False):
        label = ("tracing on (LAMBDA_TASK_ROOT set, as deployed)" if tracing
                 else "tracing off (POWERTOOLS_TRACE_DISABLED=true)")
        samples = measure(subjects, runs, lambda_environment(tracing))
        print(f"\n{label}")
        print(table(["module", "import ms", "× import boto3", "goal", "", "peak RSS MiB"],
                    rows(samples)))


if __name__ == "__main__":
    main()
