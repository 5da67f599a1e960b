"""Run a command and say where the machine's CPU went while it ran, by kind of
process (Chromium's browser and renderers, Playwright's Node, the chatagent
commands by name, test workers). Linux only: it reads /proc.

    python scripts/cpu_by_process.py -- make test

Every process's CPU (user + system) is sampled every half second and its last
sample kept, so a process that lives less than that is missed, and a
process's last half second too: a floor, for proportions."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter

TICKS = os.sysconf("SC_CLK_TCK")
KINDS = ("renderer", "gpu-process", "utility", "zygote")


def kind(argv: list[str]) -> str:
    exe, line = os.path.basename(argv[0]) if argv else "?", " ".join(argv)
    if exe.startswith("chrome_crashpad"):
        return "chromium crash handler"
    if "chrom" in exe or "headless_shell" in exe:
        return "chromium " + next((k for k in KINDS if f"--type={k}" in line), "browser")
    if exe == "node":
        return "node (Playwright's driver or server)"
    if "python" in exe:
        if "chatagent" in argv:
            words = [a for a in argv[argv.index("chatagent") + 1:] if not a.startswith("-")]
            return "chatagent " + (words[0] if words else "")
        if "extension_bridge" in line:
            return "chatagent's extension host"
        if "multiprocessing" in line:
            return "worker processes (multiprocessing)"
        if "exec(eval(" in line or "pytest" in line:
            return "test workers"
        return "other Python"
    return exe


def sample(samples: dict[tuple[int, str], tuple[str, float]], stop: threading.Event) -> None:
    while not stop.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                key = (int(pid), fields[19])  # the start time tells a reused pid apart
                if key not in samples:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
                    if not argv:
                        continue  # between fork and exec: named at the next sample
                    samples[key] = (kind(argv), 0.0)
                samples[key] = (samples[key][0], (int(fields[11]) + int(fields[12])) / TICKS)
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
        stop.wait(0.5)


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    before = {int(p) for p in filter(str.isdigit, os.listdir("/proc"))}  # not the command's
    samples: dict[tuple[int, str], tuple[str, float]] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(samples, stop), daemon=True)
    started = time.monotonic()
    sampler.start()
    status = subprocess.call(command)
    stop.set()
    sampler.join()
    cpu, count = Counter[str](), Counter[str]()
    for (pid, _), (what, seconds) in samples.items():
        if pid not in before:
            cpu[what] += seconds
            count[what] += 1
    print(f"\n{time.monotonic() - started:,.0f} s wall, {sum(cpu.values()):,.0f} s of CPU seen:", file=sys.stderr)
    for what, seconds in cpu.most_common():
        print(f"{seconds:8,.1f} s  {count[what]:5,} × {what}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
