"""A PDF page's tables as rows of cells. pypdf's plain extraction keeps the text's order in the
file, which suits prose (and two-column pages) but loses a table's rows: a table drawn column by
column comes out as runs of single cells ("Vendor / Acme Corp / Globex Ltd / Notice period /
90 days / 30 days"), one drawn row by row as rows with their cell boundaries gone. Its layout
extraction keeps each line where it stands on the page, columns aligned. Where that shows a
table (lines of short cells whose columns line up), the plain text's lines holding exactly its
words become its rows, cells joined by " | " as a .docx table's are; the rest of the page stays
as plain extraction gave it. Anything less certain is left alone."""

import re
from collections import Counter
from dataclasses import dataclass

# A cell on a layout line: words at most two spaces apart (layout extraction often puts two
# between words); cells are three or more apart. Justified prose has such gaps too, but its
# words do not line up from one line to the next as a table's columns do, and a line of it
# holds more of them than a table has columns.
_CELL = re.compile(r"\S+(?: {1,2}\S+)*")
# A list's or a numbered heading's mark: a first column of nothing else makes no table.
_MARK = re.compile(
    r"^(?:[\u2022\u25aa\u25e6\u00b7\u2023\u2043*\u2013\u2014-]|\d+(?:\.\d+)*[.)]?|\(?[a-z]{1,2}\)|[ivx]+[.)])$"
)
COLUMN_SLACK = 2  # characters a cell may start off its column
COLUMNS_MAX = 8
CELL_MAX_CHARS = 60
# Two columns of long cells are more likely a two-column page than a table.
TWO_COLUMN_MEAN_MAX = 30
# Two lines lining up can be chance (two list items of one length); three rarely are.
ROWS_MIN = 3


@dataclass(frozen=True)
class _Row:
    cells: list[tuple[int, str]]  # (column the cell starts at, its text)

    @property
    def starts(self) -> list[int]:
        return [start for start, _ in self.cells]


def tables_as_rows(plain: str, layout: str) -> str:
    """`plain` with each table `layout` shows written as its rows (see the module)."""
    lines = plain.split("\n")
    for table in _tables(layout):
        lines = _replaced(lines, table)
    return "\n".join(lines)


def _tables(layout: str) -> list[list[_Row]]:
    tables: list[list[_Row]] = []
    block: list[_Row] = []
    for line in layout.split("\n"):
        if not line.strip():
            continue  # layout extraction spaces rows apart with blank lines
        row = _Row([(m.start(), m.group()) for m in _CELL.finditer(line)])
        if block and _fits(block, row):
            block.append(row)
            continue
        if _is_table(block):
            tables.append(block)
        block = [row] if len(row.cells) >= 2 else []
    if _is_table(block):
        tables.append(block)
    return tables


def _fits(block: list[_Row], row: _Row) -> bool:
    """A row of the table `block` starts with its header: every cell starts at one of the
    header's columns (a row may leave cells empty), and it has at least two cells."""
    columns = block[0].starts
    return len(row.cells) >= 2 and all(
        any(abs(start - column) <= COLUMN_SLACK for column in columns) for start in row.starts
    )


def _is_table(block: list[_Row]) -> bool:
    if len(block) < ROWS_MIN or len(block[0].cells) > COLUMNS_MAX:
        return False
    if all(_MARK.match(row.cells[0][1]) for row in block):
        return False
    # A column besides the first that every row fills: a table's, not words lined up by chance.
    if not any(
        all(any(abs(start - column) <= COLUMN_SLACK for start in row.starts) for row in block)
        for column in block[0].starts[1:]
    ):
        return False
    cells = [text for row in block for _, text in row.cells]
    if any(len(text) > CELL_MAX_CHARS for text in cells):
        return False
    two_columns_of_prose = (
        len(block[0].cells) == 2 and sum(map(len, cells)) / len(cells) > TWO_COLUMN_MEAN_MAX
    )
    return not two_columns_of_prose


def _replaced(lines: list[str], table: list[_Row]) -> list[str]:
    """`lines` with the first run of whole lines holding exactly the table's words replaced by
    its rows; unchanged when there is none (the table's words are spread, or shared)."""
    wanted = Counter(word for row in table for _, text in row.cells for word in text.split())
    total = sum(wanted.values())
    for start in range(len(lines)):
        held: Counter[str] = Counter()
        count = 0
        for end in range(start, len(lines)):
            words = lines[end].split()
            held.update(words)
            count += len(words)
            if any(held[word] > wanted[word] for word in words):
                break  # a word the table does not hold (or not so often): no run from `start`
            if count == total:
                rows = [" | ".join(" ".join(text.split()) for _, text in row.cells) for row in table]
                return lines[:start] + rows + lines[end + 1 :]
    return lines
