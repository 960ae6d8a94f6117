"""The package's shape: the wings' import rules (import-linter's contracts in pyproject.toml), what each wing loads
at run time, where every module sits and how long it is. One file for the whole package, not one per module."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
WINGS = {"store", "config", "data", "models", "probes", "tracking", "run", "launch", "assess", "report", "render", "studies"}
# modules that stay at the top, each for its reason
TOP = {
    "__init__.py": "the package",
    "__main__.py": "`python -m harness`",
    "probe.py": "`python -m harness.probe`, the command users type (harness.run.interpolation)",
    "results.py": "`python -m harness.results`, the command users type (harness.report.results)",
    "track.py": "`python -m harness.track`, the command users type (harness.tracking.sync with the sweep's report)",
    "resume.py": "`python -m harness.resume FOLDER`, the command users type (harness.launch.resume)",
    "worker.py": "`python -m harness.worker`, the warm run process (harness.launch.worker starts it): it re-enters "
                 "the command line (harness.launch.cli) for each job, so it sits above launch",
    "fields.py": "ConfigError and the value readers every wing's config group is parsed with",
}
# packages at the top that are not wings, each for its reason
TOP_PACKAGES = {
    "backend": "Keras and its backend (TensorFlow or JAX) for a run process: every wing that runs a model takes "
               "them from here, and what differs between the backends lives in its tf_ops and jax_ops",
}


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)})


def test_every_wing_rule_is_kept():
    linted = _lint(REPO)
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-3000:]
    assert "0 broken" in linted.stdout


@pytest.mark.parametrize("module, line, broken", [
    ("report/html.py", "from harness.backend import tf", "harness.report is not allowed to import harness.backend"),
    ("tracking/sync.py", "import mlflow", "harness is not allowed to import mlflow"),  # only mlflow_store may
])
def test_a_wrong_import_breaks_a_contract(tmp_path, module, line, broken):
    """The report may not load a backend, nor any module but one MLflow: a copy of the package with such an import
    fails."""
    shutil.copytree(REPO / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "conf"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    path = tmp_path / "harness" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402\n")
    linted = _lint(tmp_path)
    assert linted.returncode == 1, linted.stdout[-3000:]
    assert broken in linted.stdout
    importer = "harness." + module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {line.split()[1]}" in linted.stdout


def test_what_each_wing_loads_when_imported():
    """import-linter reads imports inside functions too; these rules are about what importing a module loads."""
    light = ["harness.backend", "harness.data.registry", "harness.models.registry", "harness.config.schema",
             "harness.config.compose",
             *(".".join(path.relative_to(REPO).with_suffix("").parts)
               for wing in ("launch", "assess", "report", "render", "store", "tracking", "studies")
               for path in sorted((REPO / "harness" / wing).rglob("*.py"))
               if path.stem not in ("__main__", "mlflow_store", "hooks")),  # a study's run hooks: a run's process
             "harness.probes.curvature", "harness.probes.noise_scale", "harness.probes.interpolation"]
    code = ("import importlib, json, sys\n"
            f"for name in {light!r}:\n"
            "    importlib.import_module(name)\n"
            "print(json.dumps([m for m in ('tensorflow', 'keras', 'jax', 'mlflow') if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", f"a backend or MLflow loaded with {light}"


def test_every_module_sits_in_a_wing_or_says_why_it_is_at_the_top():
    package = REPO / "harness"
    folders = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == WINGS | set(TOP_PACKAGES)
    assert {p.name for p in package.glob("*.py")} == set(TOP)
    for wing in WINGS:
        doc = (package / wing / "__init__.py").read_text()
        assert doc.startswith('"""') and "May import" in doc, f"{wing}/__init__.py says what it may import"
        assert "import " not in doc.split('"""', 2)[2], f"{wing}/__init__.py re-exports nothing"


# Modules longer than one sitting (~300 lines), each for its reason: a smell to look at when one grows, not a
# number to split a module's one job under.
LONG: dict[str, str] = {}


@pytest.mark.parametrize("wing", sorted(WINGS | set(TOP_PACKAGES)))
def test_a_module_reads_in_one_sitting_or_says_why_not(wing):
    for path in sorted((REPO / "harness" / wing).rglob("*.py")):
        name, lines = str(path.relative_to(REPO / "harness")), len(path.read_text().splitlines())
        if name in LONG:
            assert lines > 300, f"{name} is {lines} lines now: take it out of LONG"
        else:
            assert lines <= 300, f"{name}: {lines} lines; split its jobs, or give LONG its reason"


def test_a_circle_between_a_wings_modules_breaks_a_contract(tmp_path):
    """Two modules of one wing that import each other (as the launch wing's cli -> sweep_end -> tracking_watch ->
    worker -> cli once did): import-linter's acyclic_siblings contract names the import to remove."""
    shutil.copytree(REPO / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "conf"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    path = tmp_path / "harness" / "launch" / "processes.py"  # the tracker starts its process with processes'
    path.write_text(path.read_text() + "\nfrom harness.launch import tracker  # noqa: E402\n")
    linted = _lint(tmp_path)
    assert linted.returncode == 1, linted.stdout[-3000:]
    assert "No cycles are allowed in harness.launch" in linted.stdout
    assert re.search(r"- \.(tracker -> \.processes|processes -> \.tracker) \(1 import\)", linted.stdout)


def study_references(package: Path, names: set[str]) -> list[str]:
    """Where a module of `package` outside its studies/ names a study (`names`): a comparison with a study's name
    (`study == "recover"`, `name in ("hoffer", "controls")`), a study's key read (`plan.get("diagnose")`,
    `plan["diagnose"]`) or an import of a study's module (`harness.studies.<name>`). "path:line: what" each."""
    import ast

    def named(node) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(element) for element in node.elts)
        if isinstance(node, ast.Dict):
            return any(key is not None and named(key) for key in node.keys)
        return False

    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == "studies":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            what = None
            if isinstance(node, ast.Compare) and any(named(side) for side in (node.left, *node.comparators)):
                what = "compares with a study's name"
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and node.args and named(node.args[0]):
                what = "reads a study's key"
            elif isinstance(node, ast.Subscript) and named(node.slice):
                what = "reads a study's key"
            elif isinstance(node, ast.Import):
                if any(alias.name.split(".")[2:3] and alias.name.split(".")[2] in names
                       for alias in node.names if alias.name.startswith("harness.studies.")):
                    what = "imports a study's module"
            elif isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["harness", "studies"] and (
                        (len(parts) > 2 and parts[2] in names) or
                        (len(parts) == 2 and any(alias.name in names for alias in node.names))):
                    what = "imports a study's module"
            if what:
                found.append(f"{relative}:{node.lineno}: {what}")
    for path in sorted(package.rglob("*.j2")):  # the page's templates: a study's command, style or id by its name
        relative = path.relative_to(package)
        if relative.parts[0] == "studies":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            named_here = [name for name in sorted(names) if re.search(
                rf"(\+study={name}\b|\.verdict\.{name.replace('_', '-')}\b|id=\"{name}\")", line)]
            if named_here:
                found.append(f"{relative}:{number}: names a study ({', '.join(named_here)})")
    return found


def test_the_generic_wings_never_name_a_study():
    """No module of harness/ outside studies/, no template of the page's and no script of scripts/ compares a value
    with a registered study's name, reads a study's own key or imports a study's module: the commands look a study
    up by the name the command or the sweep gives (harness.studies.registry) and the wings call its interface.
    (benchmarks/ run chosen studies by name: each is a measurement of one.)"""
    from harness.studies import registry

    names = {study.name for study in registry.every()}
    assert {"diagnose", "recover", "tuned", "scaling"} <= names
    assert study_references(REPO / "harness", names) == []
    assert study_references(REPO / "scripts", names) == []


def cross_study_imports(studies: Path, names: set[str]) -> list[str]:
    """Where a study's module imports another study's (`harness.studies.<other>`): "path:line" each."""
    import ast

    found = []
    for path in sorted(studies.rglob("*.py")):
        relative = path.relative_to(studies)
        own = relative.parts[0] if len(relative.parts) > 1 else None
        for node in ast.walk(ast.parse(path.read_text())):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for module in modules:
                parts = module.split(".")
                if parts[:2] == ["harness", "studies"] and len(parts) > 2 and parts[2] in names and parts[2] != own:
                    found.append(f"{relative}:{node.lineno}")
    return found


def test_a_study_reaches_another_only_through_the_interface(tmp_path):
    """A study that reads a sweep as another would (scaling short of its target reads it as tuned does) finds that
    study by name (harness.studies.registry) and calls its Study methods, never imports its modules; a copy that
    does is caught."""
    from harness.studies import registry

    names = {study.name for study in registry.every()}
    assert cross_study_imports(REPO / "harness" / "studies", names) == []
    copy = tmp_path / "studies"
    shutil.copytree(REPO / "harness" / "studies", copy, ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "scaling" / "__init__.py"
    lines = len(module.read_text().splitlines())
    module.write_text(module.read_text() + "from harness.studies.tuned import STUDY\n")
    assert cross_study_imports(copy, names) == [f"scaling/__init__.py:{lines + 1}"]


def test_naming_a_study_in_a_generic_wing_is_found(tmp_path):
    """The check above on a copy of the package whose generic wings name a study the three ways it looks for."""
    shutil.copytree(REPO / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "conf"))
    for module, line in [("assess/analysis.py", 'study = None\nif study == "recover":\n    pass'),
                         ("render/summary.py", 'plan = {}\nplan.get("diagnose")'),
                         ("launch/progress.py", "from harness.studies.tuned import reading")]:
        path = tmp_path / "harness" / module
        path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    template = tmp_path / "harness" / "report" / "templates" / "report.html.j2"
    template.write_text(template.read_text() + "<p><code>+study=recover batch_size=8,64</code></p>\n")
    found = study_references(tmp_path / "harness", {"diagnose", "recover", "tuned"})
    assert [entry.split(":")[0] for entry in found] == ["assess/analysis.py", "launch/progress.py",
                                                       "render/summary.py", "report/templates/report.html.j2"]
    assert [entry.split(": ", 1)[1] for entry in found] == ["compares with a study's name",
                                                           "imports a study's module", "reads a study's key",
                                                           "names a study (recover)"]


def _wings_of(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.wings"], cwd=root, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def test_the_folders_import_each_other_one_way_as_the_docs_draw_them():
    """The wings' import graph (scripts/wings.py): no arrow from a lower layer to a higher one, no circle, and
    docs/architecture.md's picture is the graph the code has."""
    from benchmarks.doc_blocks import read_section
    from scripts import wings

    found = wings.read()
    assert found.upward == [] and found.circles == []
    assert {"report", "render", "studies"} <= set(found.imports)
    assert "studies" in found.imports["report"] and "render" in found.imports["studies"]
    assert read_section(wings.BLOCK).strip() == found.picture().strip(), "run python -m scripts.wings --update-docs"


def test_the_kit_importing_a_study_is_an_upward_arrow_and_a_circle(tmp_path):
    """A copy whose report kit imports the studies' registry (as the report's one folder once did): the graph
    names the arrow and the circle, and the command fails."""
    shutil.copytree(REPO / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__", "conf"))
    (tmp_path / "scripts").mkdir()
    for name in ("__init__.py", "wings.py"):
        shutil.copy(REPO / "scripts" / name, tmp_path / "scripts" / name)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    assert _wings_of(tmp_path).returncode == 0
    path = tmp_path / "harness" / "render" / "tables.py"
    path.write_text(path.read_text() + "\nfrom harness.studies import registry  # noqa: E402\n")
    drawn = _wings_of(tmp_path)
    assert drawn.returncode == 1
    assert "render    ─▶ studies, assess, store" in drawn.stdout
    assert "1 running upward, 1 circle." in drawn.stdout
