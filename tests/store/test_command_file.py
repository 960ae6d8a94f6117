"""command.json read back (harness.store.command_file): a file that lacks the versions still resumes, one that lacks
what a resume needs is no command at all (python -m harness.resume then says so in one line, exit 2), never a
traceback."""
import json
import subprocess
import sys

from harness.store import command_file


def test_a_command_json_without_its_versions_reads_with_them_unknown(tmp_path):
    (tmp_path / "command.json").write_text(json.dumps({"argv": ["-m"], "cwd": str(tmp_path), "multirun": True}))
    command = command_file.read(tmp_path)
    assert command.argv == ["-m"] and command.multirun and command.harness_version is None


def test_a_command_json_without_what_a_resume_needs_is_no_command(tmp_path):
    (tmp_path / "command.json").write_text(json.dumps({"argv": ["-m"], "cwd": str(tmp_path)}))
    assert command_file.read(tmp_path) is None
    proc = subprocess.run([sys.executable, "-m", "harness.resume", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "is not allowed: a folder holding command.json" in proc.stderr
