import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.quotes import normalise_quote, quote_locate

PASSAGE = "The supplier shall not be liable for any indirect damages.\nThis limit survives termination."


def test_exact_quote_is_located_at_its_span():
    # given a quote copied verbatim from the middle of the passage
    quote = "not be liable for any indirect damages"

    # when
    span = quote_locate(PASSAGE, quote)

    # then
    assert span == (19, 57)
    assert PASSAGE[19:57] == quote


def test_quote_at_the_very_start_and_end_of_the_text():
    assert quote_locate(PASSAGE, "The supplier") == (0, 12)
    assert quote_locate(PASSAGE, "survives termination.") == (len(PASSAGE) - 21, len(PASSAGE))


@pytest.mark.parametrize(
    ("text", "quote", "expected"),
    [
        # a newline in the text, a space in the quote
        ("indirect damages.\nThis limit", "damages. This limit", "damages.\nThis limit"),
        # CRLF and a run of spaces in the text
        ("shall\r\n   not be", "shall not be", "shall\r\n   not be"),
        # a tab and a non-breaking space in the text
        ("shall\tnot\u00a0be liable", "shall not be liable", "shall\tnot\u00a0be liable"),
        # whitespace runs in the quote, single spaces in the text
        ("shall not be liable", "shall \r\n\t not   be", "shall not be"),
        # leading and trailing whitespace of the quote is not part of the span
        ("a shall not be b", "  \n shall not be \t", "shall not be"),
    ],
)
def test_whitespace_differences_match_and_map_back_to_the_original_span(text, quote, expected):
    # when
    span = quote_locate(text, quote)

    # then the span is the original text, with its own whitespace
    assert span is not None
    assert text[span[0] : span[1]] == expected


@pytest.mark.parametrize(
    ("text", "quote", "expected"),
    [
        ("the \u201cService\u201d means", 'the "Service" means', "the \u201cService\u201d means"),
        ('the "Service" means', "the \u201cService\u201d means", 'the "Service" means'),
        ("the supplier\u2019s duty", "the supplier's duty", "the supplier\u2019s duty"),
        ("the supplier's duty", "the supplier\u2018s duty", "the supplier's duty"),
        (
            "\u00abVertrag\u00bb und \u201eLeistung\u201d",
            '"Vertrag" und "Leistung"',
            "\u00abVertrag\u00bb und \u201eLeistung\u201d",
        ),
    ],
)
def test_typographic_quotes_match_straight_ones_both_ways(text, quote, expected):
    # when
    span = quote_locate(text, quote)

    # then
    assert span is not None
    assert text[span[0] : span[1]] == expected


@pytest.mark.parametrize(
    "quote",
    [
        '"not be liable for any indirect damages"',
        "\u201cnot be liable for any indirect damages\u201d",
        "'not be liable for any indirect damages'",
        "not be liable for any indirect damages...",
        "not be liable for any indirect damages\u2026",
        "...not be liable for any indirect damages",
        "\u2026 not be liable for any indirect damages",
        '"not be liable for any indirect damages..."',
        "\u201cnot be liable for any indirect damages\u2026\u201d",
        '"not be liable for any indirect damages"...',
    ],
)
def test_quote_wrapped_in_quotation_marks_or_with_an_ellipsis_is_found_without_them(quote):
    # when
    span = quote_locate(PASSAGE, quote)

    # then the marks and the ellipsis are not part of the span
    assert span == (19, 57)
    assert PASSAGE[19:57] == "not be liable for any indirect damages"


def test_quotation_marks_that_are_part_of_the_text_are_kept_in_the_span():
    # given the quotation marks occur in the text itself
    text = 'The "Supplier" means Acme.'

    # then the literal match wins over the stripped candidate
    assert quote_locate(text, '"Supplier"') == (4, 14)


@pytest.mark.parametrize(
    "quote",
    [
        "not liable for any indirect damages",  # a word left out
        "NOT BE LIABLE",  # case differs
        "the supplier shall",  # case differs
        "indirect damages. This limit survives termination. Forever.",  # runs past the end
        "damages.This limit",  # whitespace removed, not just changed
        "",
        "   \n\t",
        '""',
        "...",
        "\u2026",
    ],
)
def test_quote_not_in_the_text_is_not_found(quote):
    assert quote_locate(PASSAGE, quote) is None


def test_nothing_is_found_in_empty_or_blank_text():
    assert quote_locate("", "liable") is None
    assert quote_locate(" \r\n\t", "liable") is None


def test_the_first_occurrence_is_located():
    assert quote_locate("liable or liable", "liable") == (0, 6)


def test_normalise_quote_collapses_whitespace_and_straightens_quotes():
    assert normalise_quote("  \u201cA\u201d\r\n\t b\u00a0\u2019c\u2019  ") == "\"A\" b 'c'"


# --- Property -------------------------------------------------------------------------------
# Fragments rather than characters, so CRLF and whitespace runs are drawn as often as letters.
_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            [
                " ",
                "   ",
                "\t",
                "\r\n",
                "\n",
                "\u00a0",
                "\u2003",
                "\u201c",
                "\u201d",
                "\u2018",
                "\u2019",
                "\u00ab",
                "\u00bb",
                '"',
                "'",
                "...",
                "\u2026",
                "a",
                "b",
                "\u00e9",
                "\u0130",
                "\u4e2d",
                "\U0001f600",
            ]
        ),
        st.text(max_size=4),
    ),
    max_size=25,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, data=st.data())
def test_property_any_substring_is_located_at_an_equivalent_exact_span(text, data):
    # given a random slice of random text
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    quote = text[start:end]
    needle = normalise_quote(quote)

    # when
    span = quote_locate(text, quote)

    # then a quote with any visible character is found, and the span is exact text of the
    # original whose normal form is the quote's
    if not needle:
        assert span is None
        return
    assert span is not None
    found_start, found_end = span
    assert 0 <= found_start < found_end <= len(text)
    found = text[found_start:found_end]
    assert found in text
    assert normalise_quote(found) == needle
    # the span has no leading or trailing whitespace of its own
    assert found == found.strip()


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, quote=_TEXT)
def test_property_a_located_span_always_normalises_to_a_candidate_of_the_quote(text, quote):
    # when
    span = quote_locate(text, quote)

    # then whatever the inputs, a span is a non-empty slice of the text that matches the quote
    # itself or the quote without its quotation marks and ellipsis
    if span is None:
        return
    found = normalise_quote(text[span[0] : span[1]])
    assert found
    needle = normalise_quote(quote)
    assert found in needle
