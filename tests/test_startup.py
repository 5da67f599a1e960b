"""Start-up: commands that read no page import none of the libraries that read pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT

PAGE_LIBRARIES = ("trafilatura", "bm25s", "numpy", "playwright", "langchain_google_genai")

# Runs `chatagent ARGS...` in this process, then writes the modules it imported to the file named first.
_IMPORTS_OF = textwrap.dedent("""
    import json, sys
    from chatagent.cli import main
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
    with open(sys.argv[1], "w") as out:
        json.dump(sorted(sys.modules), out)
""")


def imported_by(tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}
    proc = subprocess.run([sys.executable, "-c", _IMPORTS_OF, str(out), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return set(json.loads(out.read_text()))


def page_libraries(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.partition(".")[0] in PAGE_LIBRARIES)


@pytest.mark.parametrize("args", [
    ["--help"], ["config", "show"], ["config", "show", "--json"], ["config", "path"], ["ask", "--help"],
    ["bridge", "--help"],
], ids=" ".join)
def test_commands_that_read_no_page_import_no_page_libraries(tmp_path: Path, args: list[str]) -> None:
    assert page_libraries(imported_by(tmp_path, *args)) == []
