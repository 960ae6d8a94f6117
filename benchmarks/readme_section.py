"""Rewrite one marked section of the README with a benchmark's table."""
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def read_section(name: str) -> str:
    """The text between `<!-- NAME:start -->` and `<!-- NAME:end -->` in README.md."""
    content = README.read_text()
    start = content.index(f"<!-- {name}:start -->") + len(f"<!-- {name}:start -->")
    return content[start:content.index(f"<!-- {name}:end -->")].strip("\n")


def replace_section(name: str, text: str) -> None:
    """Put `text` between `<!-- NAME:start -->` and `<!-- NAME:end -->` in README.md."""
    start_marker, end_marker = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    content = README.read_text()
    start, end = content.index(start_marker) + len(start_marker), content.index(end_marker)
    README.write_text(content[:start] + "\n" + text + "\n" + content[end:])
