"""README's two set-up commands are what CI runs."""
import re

from mpi_util import ROOT


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return blocks[0].strip(), blocks[1].strip()


def test_ci_runs_readme_commands_literally():
    install, test = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text()
    ci_lines = [line.strip() for line in ci.splitlines()]
    assert install in ci_lines
    assert test in ci_lines
    assert "pytest" in test
    assert ci.index(install) < ci.index(test)
    assert "set -euo pipefail" in ci
