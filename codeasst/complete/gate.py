"""Whether to ask the model at all: decided on the CPU in well under a millisecond.

As the seed product does: no suggestion inside a comment or a string (unless
configured), in the middle of an identifier, or where more than a few
characters other than closing punctuation sit right of the cursor; and none
in a file the repository's ignore rules exclude (the caller checks that).
"""

from __future__ import annotations

from codeasst.complete.cut import parse

_CLOSING = set(")]}\"'`;:,. \t")
_MAX_RIGHT = 3  # characters right of the cursor, other than closing punctuation, that still allow a suggestion


def _inside(grammar: str, text: str, offset: int) -> str | None:
    """"a comment" or "a string" where the cursor (a byte offset) sits inside one."""
    tree = parse(grammar, text)
    if tree is None:
        return None
    node = tree.root_node.descendant_for_byte_range(max(0, offset - 1), offset)
    while node is not None:
        kind = node.type
        if "comment" in kind and node.start_byte < offset <= node.end_byte:
            return "a comment"
        if kind in ("string", "template_string", "raw_string_literal", "string_literal", "interpreted_string_literal") \
                and node.start_byte < offset < node.end_byte:
            return "a string"
        node = node.parent
    return None


def reason_not_to_ask(grammar: str | None, prefix: str, suffix: str, *, in_comments: bool = False) -> str:
    """Why no suggestion should be asked for at the cursor between `prefix` and `suffix`; "" to ask."""
    before = prefix[-1:] if prefix else ""
    after = suffix[:1]
    if before and after and (before.isalnum() or before == "_") and (after.isalnum() or after == "_"):
        return "the cursor is inside an identifier"
    rest = suffix.split("\n", 1)[0]
    if sum(1 for ch in rest if ch not in _CLOSING) > _MAX_RIGHT:
        return "there is code right of the cursor"
    if grammar and not in_comments:
        inside = _inside(grammar, prefix + suffix, len(prefix.encode("utf-8", "surrogatepass")))
        if inside:
            return f"the cursor is inside {inside}"
    return ""
