"""A report or index page read as its structure, not searched as text: parsed with BeautifulSoup, its tables as rows
of cell texts keyed by their header, its sections by heading, its verdict and facet blocks by class."""
from __future__ import annotations

from bs4 import BeautifulSoup, Tag


def parse(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def text(node: Tag) -> str:
    """A node's text as a reader sees it: its pieces joined by single spaces."""
    return " ".join(node.get_text(" ").split())


def table_after(page: BeautifulSoup, heading: str) -> Tag:
    """The first table after the <h2> whose text is `heading`."""
    h2 = next(h for h in page.find_all("h2") if text(h) == heading)
    return h2.find_next("table")


def records(table: Tag) -> list[dict[str, str]]:
    """The table's rows as {header: cell text}, the header row being the one of <th> cells; a row that spans the
    table's columns (a run's error under it) comes as {"": text}."""
    header = [text(th) for th in table.find("tr").find_all("th")]
    rows = []
    for tr in table.find_all("tr")[1:]:
        cells = tr.find_all("td")
        if len(cells) == len(header):
            rows.append({name: text(cell) for name, cell in zip(header, cells)})
        elif cells:
            rows.append({"": text(cells[-1])})
    return rows


def runs(page: BeautifulSoup) -> list[dict[str, str]]:
    """The report's runs table, a record per run (an error line under a run left out)."""
    return [row for row in records(table_after(page, "Runs")) if "run" in row]


def runs_cells(page: BeautifulSoup, run_id: str) -> list[Tag]:
    """The <td> cells of one run's row in the runs table."""
    table = table_after(page, "Runs")
    return next(tr.find_all("td") for tr in table.find_all("tr") if tr.td and text(tr.td) == run_id)


def section_nodes(page: BeautifulSoup, section_id: str) -> list:
    """What follows the <h2 id=...>, up to the next <h2>."""
    nodes = []
    for node in page.find("h2", id=section_id).next_siblings:
        if isinstance(node, Tag) and node.name == "h2":
            break
        nodes.append(node)
    return nodes


def section(page: BeautifulSoup, section_id: str) -> str:
    """The text of the <h2 id=...> section, up to the next <h2>."""
    parts = [text(node) if isinstance(node, Tag) else str(node).strip() for node in section_nodes(page, section_id)]
    return " ".join(p for p in parts if p)


def blocks(page: BeautifulSoup, kind: str = "verdict") -> list[Tag]:
    """The verdict blocks (<div class="verdict ...">), or another kind of block by its first class."""
    return [div for div in page.find_all("div") if (div.get("class") or [None])[0] == kind]


def facets(page: BeautifulSoup) -> list[str]:
    """Every <div class="facet">'s text, in page order."""
    return [text(div) for div in page.find_all("div", class_="facet")]
