"""Text from data or configuration (a dataset's title, a run group's folder name, a claim's explanation) written into
a format that has markup, as text of that format and never as its markup: one function per place it lands.

``snakemake --report`` renders each caption and its landing page as a Jinja template, then as reStructuredText
(docutils, whose ``raw`` and ``include`` directives are on), and inserts the HTML into the page as it is: text
that reaches them goes through ``report_text`` (Jinja and reStructuredText). HTML pages of our own: ``html_text``.
Markdown tables and notes: ``md_text``, ``md_paragraph``. LaTeX: ``tex_comment`` (and pandas' ``to_latex(escape=True)``
for tables)."""

from __future__ import annotations

import html
import re
import string

import polars as pl

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ASCII_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (line breaks of any kind included) as one space."""
    return " ".join(str("" if text is None else text).split())


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """'1 run', '2 runs', '0 runs' (``nouns``: the plural where it is not ``noun`` + 's')."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def rst_text(text: object) -> str:
    """Any text as literal reStructuredText inline content, on one line: every ASCII punctuation character
    backslash-escaped, so that nothing in it starts markup — no directive (``.. raw::``, ``.. include::``), role,
    substitution, link, URI, list or section — wherever the line stands (a paragraph, a list item, a table cell).
    Control characters are left out (docutils marks its own escapes with NUL)."""
    return _ASCII_PUNCTUATION.sub(r"\\\1", _CONTROL.sub("", one_line(text)))


def jinja_text(text: str) -> str:
    """``text`` as literal text of a Jinja template: every '{' is written as the expression ``{{ '{' }}``, so that no
    tag, expression or comment (``{%``, ``{{``, ``{#``, with or without '-' / '+') can start in it; a '}' or '%'
    alone is text to Jinja."""
    return text.replace("{", "{{ '{' }}")


def report_text(text: object) -> str:
    """Text for a page that ``snakemake --report`` renders (Jinja, then reStructuredText): literal in both."""
    return jinja_text(rst_text(text))


def html_text(text: object) -> str:
    """Text for an HTML element's content or a quoted attribute value."""
    return html.escape(str("" if text is None else text), quote=True)


# CommonMark lets every ASCII punctuation character be backslash-escaped; these start inline markup or raw HTML
# (links, images, emphasis, code, entities, tags, autolinks, strike-through, math) or end a table cell.
_MD_INLINE = r"([\\`*_\[\]<>&|~$])"
# At the start of a paragraph: a heading, a quote, a list item, a thematic break, a setext underline.
_MD_BLOCK_START = re.compile(r"^([#>+=-]|\d+(?=[.)]))")


def md_text(text: object) -> str:
    """Any text as literal Markdown (CommonMark / GitHub) inline content on one line, fit for a table cell."""
    return re.sub(_MD_INLINE, r"\\\1", one_line(text))


def md_text_expr(column: pl.Expr) -> pl.Expr:
    """``md_text`` of every value of a string column."""
    return column.str.replace_all(r"\s+", " ").str.strip_chars(" ").str.replace_all(_MD_INLINE, r"\$1")


def md_paragraph(text: object) -> str:
    """Any text as a literal Markdown paragraph on one line: ``md_text``, and a start that would make it a heading,
    a quote, a list or a rule is escaped."""
    line = md_text(text)
    match = _MD_BLOCK_START.match(line)
    if match is None:
        return line
    if match.group(1).isdigit():  # "1. x" is a list item, "1\. x" is text
        return line[: match.end()] + "\\" + line[match.end() :]
    return "\\" + line


def tex_comment(text: str) -> str:
    """``text`` as one LaTeX comment line: nothing in a comment is read by TeX up to the end of its line, and the
    text has no line end of its own left."""
    return f"% {one_line(text)}\n"
