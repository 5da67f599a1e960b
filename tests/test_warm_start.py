"""The tests' warm start (tests/warm_start.py) runs a command as a fresh
interpreter would: its arguments, environment, working directory and
standard streams, its exit status, the signals it is sent and how it dies.
The same tests pass with CHATAGENT_TEST_COLD_START=1, where `command` is
`python -m MODULE`."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from warm_start import HERE, command

ENV = {**os.environ, "PYTHONPATH": str(HERE), "PROBE": "from the test"}


def probe(*args: str) -> list[str]:
    return command(*args, module="warm_probe")


def test_a_command_gets_its_arguments_environment_directory_and_streams_and_exits_as_it_did(tmp_path: Path) -> None:
    proc = subprocess.run(probe("echo", "3"), cwd=tmp_path, env=ENV, input="typed in", capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3
    assert proc.stdout == f"args=['echo', '3'] cwd={tmp_path} probe=from the test stdin='typed in'\n"
    assert proc.stderr == "to stderr\n"


@pytest.mark.parametrize(("sig", "how", "status"), [
    (signal.SIGTERM, "default", -signal.SIGTERM),  # killed by it
    (signal.SIGTERM, "handle", 143),  # its handler exits
    (signal.SIGINT, "default", -signal.SIGINT),  # KeyboardInterrupt, uncaught
])
def test_a_signal_sent_reaches_the_command_and_its_end_is_the_status(sig: signal.Signals, how: str, status: int) -> None:
    proc = subprocess.Popen(probe("wait", how), env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout
    int(proc.stdout.readline())  # it is running, its handler set
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == status
    assert proc.stderr and ("KeyboardInterrupt" in proc.stderr.read()) == (sig == signal.SIGINT)


def test_a_killed_launcher_takes_its_command_down() -> None:
    proc = subprocess.Popen(probe("wait", "default"), env=ENV, stdout=subprocess.PIPE, text=True)
    assert proc.stdout
    pid = int(proc.stdout.readline())
    proc.kill()
    assert proc.wait(timeout=60) == -signal.SIGKILL
    for _ in range(600):
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the command (pid {pid}) outlived its launcher")
