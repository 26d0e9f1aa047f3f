"""The question of "where do I add X?" read: whether a question asks where a new X goes (or where the
existing ones are registered, or where X is configured), what X is, which kind of thing (an endpoint, a
command, a plugin, a setting, ...), and the existing ones it names ("like Screenshot or Copy").

A question asks it as a user types it: "Where do I add X?", "How do I register X?", "Where is X
configured?", "Where should a new X go?", or a sentence that says what is wanted and then asks ("I need an
endpoint that archives an item. Where are the items API's endpoints defined?", "If I wanted to add a new
subcommand, how would I wire it in?", "Can you show me where web routes are declared? I need to add one.").
answer/registrations.py finds where such Xs are registered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeasst.index.words import stems

# "In the X example," (or app, project, package, folder, module): the part of the repository it asks of.
PART = re.compile(r"^\W*in\s+the\s+(?P<part>[\w./ -]+?)\s+(?:example|app|project|package|folder|module),?\s+",
                  re.IGNORECASE)
PART_LATER = re.compile(r"\b(?:(?:in|to|of|for|from|into)\s+the\s+(?P<part>[\w./-]+)\s+(?:example|app|project|package|"
                        r"folder|module)|the\s+(?P<example>[\w./-]+)\s+example)\b", re.IGNORECASE)
# The question itself: where / how / which file / the right place, at the start of a sentence, after a
# comma ("If I wanted X, how would I ...") or after "show me" / "tell me" / "know".
ASKS = re.compile(r"(?:^|(?<=[.?!,;:])\s+|\b(?:me|us|know)\s+)\W*(?:where|how|which\s+file|in\s+which\s+file|"
                  r"what\s+file|what(?:'s|\s+is)\s+the\s+(?:right|best|usual)\s+place)\b", re.IGNORECASE)
# The verbs that say an X is registered somewhere, and those that say one is made; with their endings.
REGISTERS = r"register|configure|declare|mount|wire|hook|plug|attach|set\s+up|go|live|belong"
ENDINGS = r"(?:s|d|ed|ing)?"
ADDS = re.compile(rf"\b(?:add|create|put|define|introduce|implement|{REGISTERS}){ENDINGS}\b|\blisted\b", re.IGNORECASE)
# "Where is the list of supported shells?", "where's the table of handlers": where the Xs are listed.
LISTS = re.compile(r"^(?:'s|\s+is|\s+are)\s+the\s+(?:list|table|registry|map|set|array)\s+of\s+(?:the\s+)?"
                   r"(?:supported\s+|available\s+|known\s+|existing\s+|registered\s+|built-in\s+)?(?P<thing>[^?.!;]+)",
                   re.IGNORECASE)
# Where a want is said ("I need one more"), these ask where the Xs are too: "where are the keys read?"
WANTED_VERBS = re.compile(r"\b(?:read|parsed|loaded|handled|supported|listed|kept|stored|known|built|chosen|picked)\b",
                          re.IGNORECASE)
# "How would I make `zoxide init` support another shell?": a new thing it takes (not "how can I accept both").
MAKES = re.compile(r"\bmake\s+[^?]{1,60}?\s(?P<verb>support|accept|handle|recogni[sz]e)s?\b", re.IGNORECASE)
TAKES = re.compile(r"(?:support|accept|handle|recogni[sz]e)s?\b", re.IGNORECASE)
# Where the question's own clause ends: another question joined to it ("..., and what happens if ...").
CLAUSE_END = re.compile(r"[;?]|,?\s+(?:and|but)\s+(?:what|which|how|when|where|why|if|is|are|does|do)\b|"
                        r",\s*(?:what|which|how|when|where|why|if|so)\b", re.IGNORECASE)
# Where no one adds and nothing is new ("where is X registered?"), only the verbs that say X is registered.
LAST_VERBS = re.compile(rf"(?:list|{REGISTERS}){ENDINGS}", re.IGNORECASE)
THING_END = re.compile(r"[?,;:()!]|\.(?=\s|$)|\s(?:to|in|into|for|so|that|with|under|on|of|such|like|say|e\.g|i\.e|from|at|"
                       r"besides|beside|alongside|beyond|other|than|and|or|which|where|when|can|should|next)\b",
                       re.IGNORECASE)
ARTICLES = re.compile(r"^(?:(?:a|an|the|new|another|my|our|own|custom|extra|more|one|some|built-in|those|these|its|"
                      r"their|existing)\s+)+", re.IGNORECASE)
# A sentence that says what the user wants before asking where ("I want a /v1/orders group.", "If I
# wanted to add a tox subcommand, ...", "I wrote a new service provider."): the X it names.
WANTS = re.compile(r"\b(?:i|we)(?:'d|\s+would|'m|\s+am|\s+are)?\s+(?:want|wanted|like|need|adding|wrote|have\s+written|"
                   r"plan)\b", re.IGNORECASE)
WANT_THING = re.compile(r"\b(?:new|another)\s+(?P<new>[^.?!]+)|\b(?:want|wanted|like|need|adding|add|wrote|written|ship)"
                        r"\s+(?:to\s+(?:add|ship|write|create|register)\s+)?(?:a|an)\s+(?P<one>[^.?!]+)", re.IGNORECASE)
VERB_WITHIN = 10  # words: a verb further into the clause is not what it asks
# The words that stand for the X rather than name it ("how would I wire it in?").
PRONOUNS = {"it", "one", "ones", "them", "they", "those", "these", "that", "this"}

# What a question's X is, by the stems of its words (the last word of the thing first, then the whole
# question's), and the verbs that register one.
KINDS = {
    "entry point": ({"exec", "entr", "cons", "bina"}, {"entry point"}),
    "group": ({"grou", "blue", "subr", "cont"}, {"include_router", "register_blueprint", "Group", "group", "add_typer",
                                                 "mount", "Mount", "Route", "add_group", "AddGroup", "use", "namespace",
                                                 "scope"}),
    "endpoint": ({"endp", "rout", "url", "api", "view", "webh", "http", "rest", "reso"},
                 {"get", "post", "put", "patch", "delete", "head", "options", "route", "all", "api_route",
                  "websocket", "add_url_rule", "add_api_route", "add_route", "add_api_websocket_route",
                  "include_router", "register_blueprint", "mount", "handlefunc", "handle", "any", "group", "use",
                  "Route", "Mount", "WebSocketRoute", "path", "re_path", "url", "APIRoute", "Get", "Post", "Put",
                  "Patch", "Delete", "Method", "MethodFunc", "Group", "Handle", "HandleFunc", "RegisterMethod",
                  "register_route", "resources", "resource", "namespace", "scope", "match", "root", "devise_for"}),
    "command": ({"comm", "subc", "cli", "cmd", "verb"},
                {"command", "add_command", "add_typer", "add_parser", "add_subparsers", "group", "addcommand", "register",
                 "AddCommand", "subcommand", "script", "entry point"}),
    # A filter that runs before each action or request is middleware by another name.
    "middleware": ({"midd", "filt"}, {"add_middleware", "middleware", "use", "Use", "before_action", "after_action",
                                      "around_action", "prepend_before_action", "before_request", "after_request"}),
    # A setting: an attribute of a settings class (pydantic's `class Settings(BaseSettings)`) or a table of them.
    "setting": ({"sett", "conf", "envi"}, set()),
    "option": ({"opti", "flag", "argu", "swit"}, {"add_argument", "add_option", "option", "Option", "argument",
                                                  "Flags", "BoolVar", "StringVar", "IntVar", "PersistentFlags"}),
    "tool": ({"tool"}, {"tool", "add_tool", "register_tool"}),
    "plugin": ({"plug", "exte", "hook", "back", "prov", "load", "expo", "form", "rend", "repo", "chec", "rule",
                "runn", "type", "auth"},
               {"register", "hookimpl", "hookspec", "plugin", "add_plugin", "extension", "entry point", "impl", "hook",
                "addHook", "add_hook"}),
}
# "like Screenshot or Copy", "such as check-updates": the sites that list the very ones the question names
# lead; names only (capitalised, or with `-`, `_` or `.`), not the words of a sentence.
EXAMPLES = re.compile(r"\b(?:like|such\s+as|e\.g\.?|say|for\s+example|for\s+instance)\s+(?P<names>[^?;:()]+)",
                      re.IGNORECASE)
# A question about a configuration file's options rather than the command line's.
CONFIGURED = re.compile(r"\b(?:config|configuration|settings?)\b|\.(?:ya?ml|toml|ini|cfg|json|env)\b", re.IGNORECASE)
@dataclass(frozen=True)
class Asked:
    thing: str  # the X of "where do I add X?"
    verb: str  # how the question says it: add, register, mount, ...
    after: str  # the question after that verb
    part: str | None  # the folder an "in the X example" names


def asked(question: str) -> str | None:
    """The X of "where do I add X?" (and of "how do I register X", "where is X configured", "where
    should a new X go"); None for any other question."""
    found = parse(question)
    return found.thing if found else None


def parse(question: str) -> Asked | None:
    """The question's X, the verb it asks with and where it asks it; None where it asks no such thing."""
    part = PART.match(question)
    start = part.end() if part else 0
    later = PART_LATER.search(question)  # "... a new command to the string-util example?"
    named = part["part"] if part else later and (later["part"] or later["example"])
    for ask in ASKS.finditer(question[start:]):
        at = start + ask.end()
        rest = question[at:].split("?", 1)
        wanted = _wanted(question[start:start + ask.start()]) or _wanted(rest[1] if len(rest) > 1 else "")
        sentence = ask.start() == 0 or question[start:start + ask.start()].rstrip()[-1:] in ".?!"
        found = _clause(question, at, wanted, sentence)
        if found:
            return Asked(found[0], found[1], found[2], named or None)
    return None


def _wanted(text: str) -> tuple[str, str] | None:
    """The X a sentence says is wanted ("I need an endpoint that archives an item": endpoint; "" for "I
    need to add one", named before) and the words after it; None where it wants no new X ("I want to
    know how ...")."""
    if not WANTS.search(text):
        return None
    found = WANT_THING.search(text.replace("`", ""))
    if found is None:  # "I need to add one", "I need one more", "I want X to take a --timeout option"
        return ("", text) if re.search(r"\b(?:add|adding|register|create|write)\s+(?:one|it|them)\b|\bone\s+more\b|"
                                       r"\b(?:a|an|another|new|more)\b", text, re.IGNORECASE) else None
    said = found["new"] or found["one"]
    thing = ARTICLES.sub("", THING_END.split(" " + said.strip(), 1)[0].strip())
    return ("" if thing.lower() in PRONOUNS else thing), said


def _clause(question: str, at: int, wanted: tuple[str, str] | None, opens: bool) -> tuple[str, str, str] | None:
    """(X, verb, the question after the verb) of the clause asked from `at`: "where do I add X", "how
    would I wire it in" (X the one `wanted` names), "where are Xs attached"; None where the clause asks
    where something is rather than where one goes."""
    # The verb of the question's own clause: "where is a schema ... looked up, and what happens if two
    # classes are registered" asks where a lookup is, not where to register one.
    clause = CLAUSE_END.split(question[at:], maxsplit=1)[0]
    listed = LISTS.match(clause)
    if listed:  # "where is the list of supported shells?": where the Xs are listed
        thing = ARTICLES.sub("", THING_END.split(" " + listed["thing"].strip(), 1)[0].strip())
        done = thing.split()[-1].lower().endswith("ed") if thing else True  # "the list of users sorted"
        thing = " ".join(thing.split()[:3])  # "distribution file types (twine knows how to upload)"
        return None if done else (thing, "list", clause[listed.start("thing"):])
    made = MAKES.search(clause)
    taken = WANTED_VERBS.search(clause) if wanted else None  # "Where are the .pypirc keys read? I need one more"
    said = [m for m in ADDS.finditer(clause) if _asks_with(clause[:m.start()])]
    # "where are the lifecycle hooks attached": a plural noun ("hooks") before the clause's own verb
    said = said[1:] if len(said) > 1 and re.search(r"[^s]s$", said[0].group(0)) else said
    verb = (said[0] if said else None) or (TAKES.search(clause, made.start("verb")) if made else None) or \
        (taken if taken and _asks_with(clause[:taken.start()]) else None)
    if verb is None:
        return None
    fresh = re.search(r"\b(?:new|another|more)\b", clause, re.IGNORECASE)
    someone = re.search(r"\b(?:i|we|you|one)\b", clause[:verb.start()], re.IGNORECASE)
    last = not clause[verb.end():].strip()  # "where are middlewares added?": where they are added, as a list
    if not (fresh or someone or wanted or LAST_VERBS.fullmatch(verb.group(0)) and opens
            or last and verb.group(0).lower().startswith("add") and opens):
        return None  # "where is X implemented", "where is VAT added to an amount": where it is, not where one goes
    verb_end = at + verb.end()
    after = re.sub(r"^\s*(?:up|in)\b", " ", question[verb_end:].replace("`", ""))  # "hooked up", "wire it in"
    after = re.sub(r"^\s*(?:support|handling)\s+for\s+", " ", after, flags=re.IGNORECASE)  # "support for a new shell"
    thing = ARTICLES.sub("", THING_END.split(" " + after.strip(), 1)[0].strip())
    if not thing:  # the verb last: "where is X configured", "where should a new X go", "where web routes are declared"
        thing = _before_verb(clause[:verb.start()].replace("`", ""))
    words = [w for w in thing.split() if w.lower() not in ("i", "we", "you")]
    if not words or " ".join(words).lower() in PRONOUNS:
        if not (wanted and wanted[0]):
            return None
        words, after = wanted[0].split(), wanted[1]
        return " ".join(words[-3:]), verb.group(0), " " + after
    return " ".join(words[-3:]), verb.group(0), question[verb_end:]


def _asks_with(before: str) -> bool:
    """Whether a verb after `before` is the clause's own: near its start ("where should a new option for
    `http` be defined"), not a relative clause's ("how does the mixin class that adds ... ensure")."""
    words = before.split()
    return len(words) <= VERB_WITHIN and not (words and words[-1].lower() in ("that", "which", "who"))


def _before_verb(before: str) -> str:
    """The X of a clause whose verb comes last: "are tape commands" (defined), "should a new X be"
    (defined), "does the new router get" (hooked up), "web routes are" (declared)."""
    ends = re.search(r"^(?P<thing>.+?)\s+(?:is|are|was|were)\s*$", before.strip())
    if ends and not re.match(r"\W*(?:is|are|does|do|should|would|can|must|will)\b", before.strip(), re.IGNORECASE):
        before = ends["thing"]  # "where web routes are declared": the subject first
    else:
        before = re.sub(r"^.*?\b(?:is|are|does|do|should|would|can|must|will)\s+", "", before, flags=re.IGNORECASE)
    before = re.sub(r"\([^)]*\)", " ", before)  # "a new setting (an environment variable)"
    before = re.split(r"\s(?:like|such\s+as|e\.g\.?|say)\s", before, maxsplit=1, flags=re.IGNORECASE)[0]  # "tag aliases like X"
    before = re.sub(r"\s+(?:be|get|been|being|is|are)\s*$", "", before.rstrip())  # "a new X be defined"
    parts = [p.strip() for p in THING_END.split(" " + before.strip()) if p and p.strip()]
    # the part that ends in a word of a kind: "a new command-line option" of "... option for `http` be"
    kinds = [p for p in parts if any(stems(p.split()[-1]) & words for words, _ in KINDS.values())]
    fresh = [p for p in parts if re.match(r"(?:a\s+|an\s+)?(?:new|another)\b", p, re.IGNORECASE)]
    return ARTICLES.sub("", (fresh or kinds or parts or [""])[-1])


def kind_of(thing: str, question: str = "") -> str | None:
    """Which of KINDS the X is, by its words (the last word first: "API endpoint" is an endpoint, but a
    new "controller's routes" is a controller), then by the question's ("a new group of API endpoints")."""
    parsed = parse(question)
    phrase = re.split(r"[?,;]", re.sub(r"`[^`]*`", " ", parsed.after) if parsed else "", maxsplit=1)[0]
    # a command line the question quotes (`cobra-cli init --license`) is an example, not the kind
    own = re.findall(r"\b(?:new|another)\s+(\w+)'s\b", question, re.IGNORECASE)  # the new one is its owner
    words = [*own, *reversed(thing.split()), *reversed(re.findall(r"[\w-]+", phrase)),
             *reversed(re.findall(r"[\w-]+", re.sub(r"`[^`]*`", " ", question)))]
    if parsed and parsed.verb == "list":  # "the list of supported shells": a table of them, whatever holds it
        words = thing.split()[::-1]
    # "a config option", "an option in mkdocs.yml": what a configuration file sets, not the command line's
    if stems(" ".join(thing.split()[-1:])) & KINDS["option"][0] and CONFIGURED.search(question):
        return "setting"
    # "the console script", "an executable script": what an entry point declares (a console command may be
    # an artisan command)
    last = stems(" ".join(thing.split()[-1:]))
    if last & {"scri"} and any(stems(w) & KINDS["entry point"][0] for w in thing.split()[:-1]):
        return "entry point"
    # "another topping, like --olives": a flag is an option, whatever the program calls it
    if not any(stems(w) & words for w in thing.split() for words, _ in KINDS.values()) and \
            re.search(r"\b(?:like|say|such\s+as|e\.g\.?)\s+`?--?[A-Za-z]", question, re.IGNORECASE):
        return "option"
    for word in words:
        found = stems(word)
        for kind, (words, _verbs) in KINDS.items():
            if found & words:
                return kind
    return None


def word_stems(word: str) -> set[str]:
    """A word's stems with its other number ("app": apps, INSTALLED_APPS) and, for a sub-thing, the thing
    ("subcommand": command, AddCommand)."""
    word = word.lower().removesuffix("'s")
    # every part, stop words too: a thing the question names ("a custom HTTP method") is no filler
    out = set().union(*(stems(w, frozenset()) for w in (word, word + "s", word.removesuffix("s"))))
    return out | (word_stems(word[3:]) if word.startswith("sub") and len(word) > 6 else set())


def examples(question: str) -> set[str]:
    """The existing Xs a question names ("like Screenshot or Copy": screenshot, copy), letters and digits
    only, lower case; names only, not the words of a sentence ("such as one that lists ...")."""
    found = EXAMPLES.search(question.replace("`", ""))
    names = re.findall(r"[\w./-]+", found["names"]) if found else []
    return {re.sub(r"\W|_", "", n).lower() for n in names
            if len(n) >= 3 and (re.search(r"[A-Z]", n) or re.search(r"\w[-_.]\w", n))}
