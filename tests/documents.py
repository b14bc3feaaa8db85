"""Real files of each supported format, built in memory for tests."""

import io


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A valid PDF with one text line per entry, one page per list (Helvetica, WinAnsi)."""
    streams = []
    for lines in pages:
        ops = [b"BT /F1 12 Tf 14 TL 72 760 Td"]
        ops += [b"(" + _pdf_string(line) + b") Tj T*" for line in lines]
        streams.append(b"\n".join([*ops, b"ET"]))
    return _pdf(streams)


def pdf_placed_bytes(pages: list[list[tuple[int, int, str]]]) -> bytes:
    """A valid PDF with each text drawn on its own at (x, y) points, in the order given, one
    page per list: how many PDF writers draw a table, cell by cell (10 pt Helvetica)."""
    return _pdf(
        [
            b"\n".join(
                b"BT /F1 10 Tf 1 0 0 1 %d %d Tm (%s) Tj ET" % (x, y, _pdf_string(text))
                for x, y, text in cells
            )
            for cells in pages
        ]
    )


def _pdf_string(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")


def _pdf(streams: list[bytes]) -> bytes:
    """A PDF of one page per content stream, with Helvetica as its font F1."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = len(objects) + 1 + 2 * len(streams)
    page_ids = []
    for stream in streams:
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (pages_id, font, content)
            )
        )
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    )
    return out.getvalue()


def docx_bytes(blocks: list[tuple[str, str]]) -> bytes:
    """A .docx from (style, text) pairs: style "Heading 1".."Heading 9", "Title" or "Normal";
    a style of "table" makes a one-row table of the text's " | "-separated cells."""
    import docx

    document = docx.Document()
    for style, text in blocks:
        if style == "table":
            cells = text.split(" | ")
            table = document.add_table(rows=1, cols=len(cells))
            for cell, value in zip(table.rows[0].cells, cells, strict=True):
                cell.text = value
        else:
            document.add_paragraph(text, style=style)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def docx_paragraphs_bytes(count: int, text: str = "Backups") -> bytes:
    """A bare .docx (no styles part) of `count` one-run paragraphs of `text`, as a hostile
    upload builds it: a few KB of zip for MBs of XML."""
    import zipfile

    main = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = f"<w:p><w:r><w:t>{text} </w:t></w:r></w:p>" * count
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'officeDocument" Target="word/document.xml"/></Relationships>',
        )
        archive.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?><w:document xmlns:w="{main}"><w:body>{body}</w:body></w:document>',
        )
    return out.getvalue()
