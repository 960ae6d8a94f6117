"""The import graph between harness's folders (its wings), read with grimp, import-linter's own reader: every wing
in the order of pyproject.toml's layers contract, the wings each imports, and the arrows that run upward (from a
lower layer to a higher one) or close a circle. tests/test_architecture.py holds both at none and checks the picture
in docs/architecture.md against the code.

    python -m scripts.wings                # print the picture
    python -m scripts.wings --update-docs  # rewrite docs/architecture.md's `wings` block with it
"""
from __future__ import annotations

import argparse
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BLOCK = "wings"
COMMANDS = "commands"  # the modules at the top users type (python -m harness, harness.results, ...): one node


@dataclass(frozen=True)
class Wings:
    layers: list[list[str]]            # top first; the wings of one layer side by side
    imports: dict[str, set[str]]       # wing -> the wings it imports
    upward: list[tuple[str, str]]      # (importer, imported) where the imported wing sits in a higher layer
    circles: list[list[str]]           # wings that reach each other through their imports

    def picture(self) -> str:
        width = max(len(wing) for layer in self.layers for wing in layer) + 2
        lines = ["```"]
        for layer in self.layers:
            for wing in layer:
                below = [w for row in self.layers for w in row if w in self.imports.get(wing, set())]
                lines.append(f"{wing:<{width}}─▶ {', '.join(below) or '(nothing of harness)'}")
        lines.append("```")
        arrows = sum(len(imported) for imported in self.imports.values())
        lines.append(f"\n{arrows} arrows between {sum(map(len, self.layers))} wings; "
                     f"{len(self.upward)} running upward, {len(self.circles)} circle{'' if len(self.circles) == 1 else 's'}.")
        return "\n".join(lines)


def _node(module: str, commands: set[str]) -> str:
    top = module.split(".")[1] if "." in module else module
    return COMMANDS if f"harness.{top}" in commands else top


def _layers(pyproject: Path) -> list[list[str]]:
    """The layers contract's layers, top first, each layer's wings by name (the commands as one)."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers" and "containers" not in c)
    found = []
    for layer in layers:
        names = [name.strip() for part in layer.split("|") for name in part.split(":")]
        wings = list(dict.fromkeys(COMMANDS if name.count(".") == 1 and name.split(".")[1] in _COMMAND_NAMES
                                   else name.split(".")[1] for name in names))
        found.append(wings)
    return found


_COMMAND_NAMES = {"__main__", "probe", "resume", "results", "track", "worker"}


def read(root: Path = REPO) -> Wings:
    """The wings of the package under `root` (its harness/ and pyproject.toml)."""
    import grimp

    sys.path.insert(0, str(root))
    try:
        graph = grimp.build_graph("harness", cache_dir=None)
    finally:
        sys.path.remove(str(root))
    commands = {f"harness.{name}" for name in _COMMAND_NAMES}
    layers = _layers(root / "pyproject.toml")
    rank = {wing: i for i, layer in enumerate(layers) for wing in layer}
    imports: dict[str, set[str]] = {}
    for module in graph.modules:
        if module == "harness":
            continue
        importer = _node(module, commands)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith("harness.") and (target := _node(imported, commands)) != importer:
                imports.setdefault(importer, set()).add(target)
    missing = sorted((set(imports) | {w for ws in imports.values() for w in ws}) - set(rank))
    if missing:
        raise SystemExit(f"wings outside pyproject.toml's layers contract: {', '.join(missing)}")
    upward = sorted((a, b) for a, targets in imports.items() for b in targets if rank[b] < rank[a])
    return Wings(layers, imports, upward, _circles(imports))


def _circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one wing (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(wing: str) -> None:
        index[wing] = low[wing] = len(index)
        stack.append(wing)
        for other in sorted(imports.get(wing, ())):
            if other not in index:
                visit(other)
                low[wing] = min(low[wing], low[other])
            elif other in stack:
                low[wing] = min(low[wing], index[other])
        if low[wing] == index[wing]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == wing:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for wing in sorted(set(imports) | {w for ws in imports.values() for w in ws}):
        if wing not in index:
            visit(wing)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.wings", description=__doc__.splitlines()[0])
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help=f"rewrite docs/architecture.md's `{BLOCK}` block")
    args = parser.parse_args(argv)
    wings = read()
    picture = wings.picture()
    print(picture)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section(BLOCK, picture)
    return 1 if wings.upward or wings.circles else 0


if __name__ == "__main__":
    sys.exit(main())
