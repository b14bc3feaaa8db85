import pytest

from corpora.exceptions import CorruptFile, EmptyDocument, UnsupportedFileType
from corpora.extraction import extract, file_type_for
from corpora.models import FileType
from tests.documents import docx_bytes, pdf_bytes, pdf_placed_bytes


def test_file_type_comes_from_the_suffix_case_insensitively():
    assert file_type_for("a/b/Report.PDF") == FileType.PDF
    assert file_type_for("notes.markdown") == FileType.MD
    assert file_type_for("page.htm") == FileType.HTML


def test_unknown_suffix_is_refused_with_a_code():
    with pytest.raises(UnsupportedFileType) as error:
        file_type_for("archive.zip")

    assert error.value.code == "unsupported_file_type"
    assert ".zip" in error.value.message


def test_text_is_normalised_to_one_newline_convention_without_control_characters():
    extracted = extract(b"line one\r\nline two\rline three\x07\x0cpage two", FileType.TXT, filename="a.txt")

    assert extracted.text == "line one\nline two\nline three\n\npage two"


def test_symbol_font_bullets_become_the_bullets_they_draw():
    # given text a PDF or Word list left with the Symbol font's private-use bullet
    text = "limited to:\n\uf0b7 restricting access\n\uf0a7 copies\n\uf0d8 return"

    extracted = extract(text.encode(), FileType.TXT, filename="a.txt")

    # then each is the character it draws, one for one, so every offset stays where it was
    assert extracted.text == "limited to:\n\u2022 restricting access\n\u25aa copies\n\u27a2 return"
    assert len(extracted.text) == len(text)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_text_with_its_byte_order_mark_is_read(encoding):
    # given the file Windows Notepad saves as "Unicode" (a BOM, then two bytes a character)
    text = "Warranty: the seller warrants the product for twelve months. Caf\u00e9."
    content = text.encode(encoding)
    if encoding != "utf-16":
        content = ("\ufeff" + text).encode(encoding)
    # when / then
    assert extract(content, FileType.TXT, filename="notes.txt").text == text


def test_utf16_bytes_that_do_not_decode_are_a_corrupt_file():
    with pytest.raises(CorruptFile):
        extract(b"\xff\xfeA\x00\x00\xd8", FileType.TXT, filename="broken.txt")


def test_non_utf8_text_falls_back_to_cp1252():
    extracted = extract("Caf\u00e9 \u201cquoted\u201d".encode("cp1252"), FileType.TXT, filename="a.txt")

    assert extracted.text == "Caf\u00e9 \u201cquoted\u201d"


def test_binary_content_with_a_text_suffix_is_corrupt():
    with pytest.raises(CorruptFile) as error:
        extract(bytes(range(256)) * 20, FileType.TXT, filename="image.txt")

    assert error.value.code == "corrupt_file"


def test_whitespace_only_file_is_an_empty_document():
    with pytest.raises(EmptyDocument):
        extract(b"  \n\n\t ", FileType.TXT, filename="blank.txt")


def test_html_keeps_visible_text_only_with_headings_and_paragraphs():
    html = b"""<html><head><title>T</title><style>p {color: red}</style>
    <script>var secret = "do not index";</script></head>
    <body><nav>Menu</nav><h1>Privacy   Policy</h1><p>We keep <b>nothing</b>.<br>Ever.</p>
    <div hidden>hidden text</div><p style="display: none">also hidden</p>
    <!-- a comment --><noscript>enable js</noscript><p>Contact us.</p></body></html>"""

    extracted = extract(html, FileType.HTML, filename="p.html")

    assert extracted.text == "Menu\n\nPrivacy Policy\n\nWe keep nothing. Ever.\n\nContact us."
    [heading] = extracted.headings
    assert extracted.text[heading.start : heading.end] == "Privacy Policy"
    assert heading.level == 1


def test_pdf_keeps_page_numbers_per_page_span():
    content = pdf_bytes([["First page text."], ["Second page (with parens)."]])

    extracted = extract(content, FileType.PDF, filename="x.pdf")

    assert [p.number for p in extracted.pages] == [1, 2]
    first, second = extracted.pages
    assert extracted.text[first.start : first.end] == "First page text."
    assert extracted.text[second.start : second.end] == "Second page (with parens)."


VENDORS = [
    ("Vendor", "Notice period", "Renewal"),
    ("Acme Corp", "90 days", "Automatic, 1 year"),
    ("Globex Ltd", "30 days", "None"),
    ("Initech", "60 days", "On request"),
]


def _table(order: str) -> list[tuple[int, int, str]]:
    cells = [(72 + c * 160, 700 - r * 18, VENDORS[r][c]) for r in range(4) for c in range(3)]
    if order == "by column":
        cells.sort(key=lambda cell: (cell[0], -cell[1]))
    return [
        (72, 740, "The table below lists each vendor's terms."),
        *cells,
        (72, 600, "Either party may terminate on written notice as set out above."),
    ]


@pytest.mark.parametrize("order", ["by column", "by row"])
def test_a_pdf_table_is_extracted_as_rows_of_cells_however_it_is_drawn(order):
    # given a PDF table drawn cell by cell, column after column or row after row
    content = pdf_placed_bytes([_table(order)])

    # when
    extracted = extract(content, FileType.PDF, filename="vendors.pdf")

    # then each row is a line of its cells, as a .docx table's is, and the prose is as it was
    assert extracted.text == (
        "The table below lists each vendor's terms.\n"
        "Vendor | Notice period | Renewal\n"
        "Acme Corp | 90 days | Automatic, 1 year\n"
        "Globex Ltd | 30 days | None\n"
        "Initech | 60 days | On request\n"
        "Either party may terminate on written notice as set out above."
    )


def test_two_columns_of_prose_and_a_list_are_not_taken_for_tables():
    # given a page of two columns of prose, then a bulleted list set apart from its marks
    left = [
        "The supplier delivers the goods within",
        "thirty days of each purchase order and",
        "bears the risk until delivery is made.",
    ]
    right = [
        "The buyer inspects the goods on arrival",
        "and reports any defect within ten days",
        "of delivery, in writing to the supplier.",
    ]
    cells = [(72, 700 - i * 14, text) for i, text in enumerate(left)]
    cells += [(320, 700 - i * 14, text) for i, text in enumerate(right)]
    cells += [
        (x, 600 - i * 14, text)
        for i, item in enumerate(["Goods", "Services", "Licences"])
        for x, text in ((72, "\u2022"), (100, item))
    ]

    # when
    extracted = extract(pdf_placed_bytes([cells]), FileType.PDF, filename="terms.pdf")

    # then the text is as the file orders it: no cells joined across the page
    assert "|" not in extracted.text
    assert "The supplier delivers the goods within\nthirty days" in extracted.text
    assert "The buyer inspects the goods on arrival\nand reports" in extracted.text


def test_truncated_pdf_is_corrupt():
    content = pdf_bytes([["Some text."]])

    with pytest.raises((CorruptFile, EmptyDocument)):
        extract(content[:60], FileType.PDF, filename="broken.pdf")


def test_docx_paragraphs_headings_and_tables():
    content = docx_bytes(
        [
            ("Title", "Master Services Agreement"),
            ("Heading 1", "Fees"),
            ("Normal", "Fees are due monthly."),
            ("table", "Tier | Price"),
        ]
    )

    extracted = extract(content, FileType.DOCX, filename="m.docx")

    assert extracted.text == "Master Services Agreement\n\nFees\n\nFees are due monthly.\n\nTier | Price"
    assert [(extracted.text[h.start : h.end], h.level) for h in extracted.headings] == [
        ("Master Services Agreement", 1),
        ("Fees", 1),
    ]


def test_garbage_with_docx_suffix_is_corrupt():
    with pytest.raises(CorruptFile):
        extract(b"PK\x03\x04 not really a zip", FileType.DOCX, filename="bad.docx")


def test_markdown_headings_inside_code_fences_are_not_headings():
    text = b"# Real\n\n```\n# not a heading\n```\n\n## Also real"

    extracted = extract(text, FileType.MD, filename="a.md")

    assert [extracted.text[h.start : h.end] for h in extracted.headings] == ["# Real", "## Also real"]
