"""The model held to lines (answer/lines.py): a sentence is shown only where the line it cites, with
the lines beside it and its definition's outline, holds what it claims; at most three are shown."""

from __future__ import annotations

from codeasst.answer import checking, grounding, lines

FILES = '''"""Which files get indexed."""


class IgnoreRules:
    """The ignore rules of a repository."""

    def __init__(self, root):
        #: patterns read from .gitignore at every level
        self.patterns = read_gitignore(root)
        self.max_bytes = 1_000_000

    def verdict(self, path):
        if path.endswith(".min.js"):
            return "minified"
        if len(path) > 4096:
            raise ValueError("path too long")
        for pattern in self.patterns:
            if pattern.match(path):
                return "ignored"
        return "kept"
'''


def excerpts():
    return [grounding.Excerpt(1, "pkg/files.py", 1, 21, "pkg.files", FILES, 0)]


def held(sentence: str, question: str = "how are files ignored?", outlines=None) -> lines.Held:
    return lines.hold(sentence, lines.Lines(excerpts(), outlines), question)


def test_a_sentence_is_held_to_the_line_it_cites_and_to_no_other():
    ok = held("A path ending in `.min.js` is reported as minified [pkg/files.py:13].")
    assert (ok.place, ok.why) == ("pkg/files.py:13", "")
    # the same claim citing a line nowhere near the one that says it
    far = held("A path ending in `.min.js` is reported as minified [pkg/files.py:4].")
    assert far.place == "" and far.why
    outside = held("A path ending in `.min.js` is reported as minified [pkg/files.py:90].")
    assert outside.why  # not a line of the excerpt: left out, never moved to another line


def test_an_apostrophe_is_no_quote():
    assert not held("The verdict's value is minified when the path's end is `.min.js` [pkg/files.py:13].").why


def test_a_number_or_message_the_line_does_not_hold_is_left_out():
    assert held('`verdict` raises `ValueError` with "path too long" [pkg/files.py:16].').place == "pkg/files.py:16"
    assert "4097" in held("Paths longer than 4097 characters raise `ValueError` [pkg/files.py:16].").why
    assert held('`verdict` raises `KeyError` [pkg/files.py:16].').why.startswith("not on the line")


def test_a_line_number_a_little_off_gives_way_to_the_nearest_line_that_backs_the_sentence():
    assert held('`verdict` raises `ValueError` with "path too long" [pkg/files.py:11].').place == "pkg/files.py:14"
    assert held('`verdict` raises `ValueError` with "path too long" [pkg/files.py:4].').why  # 12 lines off


def test_the_outline_around_the_cited_line_counts(monkeypatch):
    monkeypatch.setattr(lines, "SLACK", 0)
    claim = "`verdict` returns ignored when one of `self.patterns` matches [pkg/files.py:12]."
    assert held(claim).why  # line 12 and its neighbours do not show the loop
    outline = {1: [(12, "    def verdict(self, path):"), (17, "        for pattern in self.patterns:"),
                   (19, '                return "ignored"')]}
    assert held(claim, outlines=outline).place == "pkg/files.py:12"


def test_a_sentence_that_restates_the_question_is_left_out():
    assert held("Files are ignored by the ignore rules [pkg/files.py:5].",
                "how are files ignored by the ignore rules?").why == "restates the question"
    assert held("Files are ignored [pkg/files.py:5].", "how are files ignored?").why == "restates the question"
    # one word of its own and no echo: an answer, not a restatement
    assert held("`verdict` returns minified [pkg/files.py:14].", "what does verdict return?").place == "pkg/files.py:14"
    # an echo of the question followed by what the code says is no restatement
    echo = "A path that ends in .min.js is reported as minified when it ends in `.min.js` [pkg/files.py:13]."
    assert held(echo, "what happens to a path that ends in .min.js?").place == "pkg/files.py:13"
    assert held("It is a path that ends in .min.js files [pkg/files.py:13].",
                "what happens to a path that ends in .min.js?").why == "restates the question"


def test_a_file_kinds_subject_needs_a_line_that_says_it_of_that_subject():
    # a line names .gitignore, another its patterns; none says .gitignore files hold chunks
    assert held(".gitignore files hold the index's chunks [pkg/files.py:8].").why
    assert held(".gitignore files hold patterns [pkg/files.py:8].").place == "pkg/files.py:8"


def test_an_uncited_sentence_is_held_to_the_line_that_backs_it_best():
    found = held('`verdict` raises `ValueError` for a path too long.')
    assert found.place == "pkg/files.py:16"
    assert held("`verdict` sends the path to a remote server.").why


def test_at_most_three_sentences_are_shown_then_the_model_is_stopped():
    checker = checking.LineChecker(excerpts(), "how does verdict decide?")
    text = ("A path ending in `.min.js` is minified [1:13]. Too long a path raises `ValueError` [1:16]. "
            "A matching pattern gives ignored [1:19]. Otherwise the verdict is kept [1:20].\n")
    stream = grounding.CitingStream(excerpts(), lambda e, line: None)
    shown = "".join(checker.feed(stream.feed(text[i:i + 4])) for i in range(0, len(text), 4))
    shown += checker.feed(stream.close()) + checker.close()
    assert shown.count("[pkg/files.py:") == 3 and "kept" not in shown
    assert checker.done and checker.places == [("pkg/files.py", 13), ("pkg/files.py", 16), ("pkg/files.py", 19)]


def test_a_line_reference_becomes_a_place_even_split_across_tokens():
    stream = grounding.CitingStream(excerpts(), lambda e, line: None)
    text = "It is minified [1:13], or [1:15-16]; [7:3] and [x:1] stay.\n"
    out = "".join(stream.feed(text[i:i + 2]) for i in range(0, len(text), 2)) + stream.close()
    assert out == "It is minified [pkg/files.py:13], or [pkg/files.py:15-16]; [7:3] and [x:1] stay.\n"


CONTEXTS = '''class RequestContext:
    """The request context. It is pushed at the start of each request
    and popped at its end. The app context is also pushed when running
    CLI commands, without a request."""

    def carry(self, headers, other_host):
        # Credentials stay with the host that asked for them.
        if "Authorization" in headers and other_host:
            del headers["Authorization"]
        for prefix, adapter in self.adapters.items():
            adapter.close()
'''


def near_words(sentence: str, question: str = "how does the request context work?") -> lines.Held:
    e = [grounding.Excerpt(1, "pkg/ctx.py", 1, 11, "pkg.ctx.RequestContext", CONTEXTS, 0)]
    return lines.hold(sentence, lines.Lines(e), question)


def test_a_docstring_backs_a_sentence_only_with_one_sentence_of_its_own():
    assert near_words("The request context is pushed at the start of each request [pkg/ctx.py:2].").place
    # its words are all in the docstring, but gathered from two of its sentences
    gathered = near_words("The request context is popped when running CLI commands [pkg/ctx.py:3].")
    assert gathered.place == "" and gathered.why


def test_a_condition_must_stand_on_a_condition_of_the_line(monkeypatch):
    monkeypatch.setattr(lines, "SLACK", 0)  # the cited line alone: the loop below it has an adapter in its condition
    question = "when is the Authorization header removed?"
    assert near_words("The header is deleted when the credentials go to another host [pkg/ctx.py:9].",
                      question).place == "pkg/ctx.py:9"
    late = near_words("The Authorization header is deleted when an adapter is closed [pkg/ctx.py:9].", question)
    assert late.place == "" and "condition" in late.why


def test_an_attribute_written_with_its_receiver_and_a_loop_in_words():
    assert near_words("It iterates over the adapters in the `self.adapters` dictionary [pkg/ctx.py:10].").place
    assert near_words("It closes each adapter of `session.adapters` [pkg/ctx.py:10].").place
    assert near_words("It closes each adapter of `session.sockets` [pkg/ctx.py:10].").why
