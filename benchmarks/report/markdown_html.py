"""The Markdown the report writers produce (``report.md``), as HTML: headings, paragraphs,
bullet lists, pipe tables, inline code and images. Every piece of text is escaped; an image is
shown only when ``image_src`` gives it a source (the HTML report passes base64 data URIs)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

_IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)$")
_CODE = re.compile(r"`([^`]+)`")
_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")


def inline_html(text: str) -> str:
    """One line of Markdown text → escaped HTML, with ```code``` spans."""
    parts = _CODE.split(text)
    return "".join(
        f"<code>{html.escape(part)}</code>" if index % 2 else html.escape(part)
        for index, part in enumerate(parts)
    )


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, *body = [line for line in lines if not _RULE.match(line.strip())]
    header = "".join(f"<th>{inline_html(cell)}</th>" for cell in _cells(head))
    rows = "".join(
        "<tr>" + "".join(f"<td>{inline_html(cell)}</td>" for cell in _cells(row)) + "</tr>"
        for row in body
    )
    table = f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
    return f'<div class="table-wrap">{table}</div>'


def markdown_to_html(text: str, image_src: Callable[[str], str | None]) -> str:
    """``text`` (the writers' Markdown subset) as an HTML fragment.

    Args:
        text: the Markdown.
        image_src: an image's path as written in the Markdown → the ``src`` to use (e.g. a data
            URI), or ``None`` to leave the image out (its alt text is shown instead).
    """
    out: list[str] = []
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            blocks[-1].append(line.rstrip())
        elif blocks[-1]:
            blocks.append([])
    for block in blocks:
        if not block:
            continue
        first = block[0]
        if first.startswith("#"):
            level = min(len(first) - len(first.lstrip("#")), 6)
            out.append(f"<h{level}>{inline_html(first[level:].strip())}</h{level}>")
            block = block[1:]
            if not block:
                continue
            first = block[0]
        image = _IMAGE.match(first.strip())
        if len(block) == 1 and image:
            src = image_src(image["src"])
            alt = html.escape(image["alt"])
            if src is None:
                out.append(f'<p class="missing-image">[{alt}]</p>')
            else:
                out.append(
                    f'<figure><img src="{html.escape(src)}" alt="{alt}" loading="lazy">'
                    f"<figcaption>{alt}</figcaption></figure>"
                )
        elif all(line.lstrip().startswith("|") for line in block):
            out.append(_table(block))
        elif all(line.startswith(("- ", "  ")) for line in block):
            items: list[str] = []
            for line in block:
                if line.startswith("- "):
                    items.append(line[2:])
                else:
                    items[-1] += " " + line.strip()
            listed = "".join(f"<li>{inline_html(item)}</li>" for item in items)
            out.append(f"<ul>{listed}</ul>")
        else:
            out.append(f"<p>{inline_html(' '.join(line.strip() for line in block))}</p>")
    return "\n".join(out)
