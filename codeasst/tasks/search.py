"""`codeasst search`: bring the index up to date (and make sure it can be trusted), then retrieve.

`ask` retrieves through `find` too. The index policy lives here, not in retrieval:
a first run says it is indexing first; an index whose manifest and vector store
disagree is rebuilt when a person is watching, and is an error (exit 3) for a
script, never an empty answer given as if it were one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, closing, nullcontext

from codeasst.backends.base import LLM
from codeasst.config import RetrievalSettings
from codeasst.errors import CodeasstError, IndexLocked, UsageError, WorkerBusy
from codeasst.index import worker
from codeasst.index.indexer import Indexer
from codeasst.index.summary import IndexSummary, Progress
from codeasst.retrieve import evidence
from codeasst.retrieve.fuse import Fused
from codeasst.retrieve.pipeline import Retrieval, Sources, retrieve
from codeasst.retrieve.query import is_english
from codeasst.retrieve.scope import DEPTH_FACTOR, Scope
from codeasst.services import Services

FIRST_INDEX_WAIT_S = 10.0  # how long a search waits for another run's lock where there is no index yet
WORKER_WAIT_S = 60.0  # how long it waits for the background embedder's group (seconds on one core) to end


def wants_model(question: str, cfg: RetrievalSettings, full_analysis: bool = True) -> bool:
    """Whether retrieval asks the model anything about `question` (cleaned): to translate it (not in
    English), to write HyDE or keywords for a short one (with the full analysis), or to rerank. A long
    English report is read without it. Decided here once, so nothing waits for a model it won't use."""
    if not is_english(question):
        return True
    if evidence.is_long(question):
        return False
    return full_analysis and (cfg.hyde or cfg.llm_keywords) or cfg.rerank


def find(services: Services, question: str, k: int | None = None, *, use_llm: bool = True,
         context: str | None = None, full_analysis: bool = True, update_index: bool = True,
         progress: Progress | None = None, preload: LLM | None = None,
         model_turn: Callable[[], AbstractContextManager] | None = None, scope: Scope | None = None) -> Retrieval:
    """Retrieval for search and ask: the index brought up to date (one Indexer, one read of its file
    list), then the pipeline. The result carries the index's folder and files for the caller.
    `preload`: a model to load meanwhile, which retrieval does not ask anything (an answer's). `model_turn()`: the model's turn, held while retrieval may use the model (a server's queue).
    `scope`: only the files it admits are searched (retrieve/scope.py)."""
    question = evidence.clean(question)
    if not question.strip():
        raise UsageError("the question is empty")
    use_llm = use_llm and wants_model(question, services.settings.retrieval, full_analysis)
    timings: dict[str, float] = {}
    notes: list[str] = []
    turn = model_turn() if use_llm and model_turn is not None else nullcontext()
    with turn, ThreadPoolExecutor(max_workers=1) as pool:
        # The model loads while the index is checked and the store opens; each takes about a second.
        # It is built here, in this thread: the first run ever unpacks it, with a progress bar of its own.
        llm = services.llm if use_llm else None
        model = services.llm if use_llm else preload
        loading: Future | None = pool.submit(model.load) if model is not None else None
        started = time.perf_counter()
        indexer = services.indexer(progress)
        summary = None
        if update_index:
            summary = _update(services, indexer, progress, notes)
        timings["index_update_s"] = round(time.perf_counter() - started, 3)
        roles = indexer.roles()  # every file that holds chunks
        files = sorted(roles)
        if not files:
            if summary is not None and summary.files == 0:
                raise CodeasstError(f"nothing is indexed under {services.repo.root}: no indexable files")
            raise CodeasstError(f"nothing is indexed under {services.repo.root}", hint="run `codeasst index`")

        searched, settings = files, services.settings.retrieval
        if scope is not None:
            searched = [f for f in files if scope.admits(f, roles.get(f, "implementation"))]
            if not searched:
                raise UsageError(f"no indexed file matches {scope.describe()}")
            settings = settings.model_copy(update={"depth": settings.depth * DEPTH_FACTOR})

        def loaded_llm() -> LLM:
            loading.result()  # re-raises a failed load
            return llm

        with closing(indexer.reader()) as store:
            dense = store.dense()
            first = services.first_embedder
            on_first = first is not None and store.in_use() == first.name  # the first phase's vectors
            if other := store.other_embedder():
                dense = {"embedded": 0, "total": dense["total"]}
                notes.append(f"the index's vectors are {other}'s, and the setting names {services.embedder.name}: "
                             f"searching words and exact matches only until `codeasst index` embeds with it "
                             f"(both are kept)")
            elif dense["embedded"] < dense["total"]:
                notes.append(dense_note(dense))
            elif on_first:
                notes.append(first_phase_note(store, services.embedder.name, dense["total"],
                                              worker.pid(indexer.index_dir) is not None))
            static = on_first or services.embedder.static  # the query embedder is the index embedder then
            sources = Sources(root=services.repo.root, files=searched, store=store,
                              embedder=lambda: first if on_first else services.query_embedder,
                              llm=loaded_llm if llm is not None else None,
                              settings=settings, index_dir=indexer.index_dir, roles=roles, scope=scope,
                              coverage=dense["embedded"] / dense["total"] if dense["total"] else 1.0,
                              dense_factor=settings.static_weight if static else 1.0,
                              reranker=(lambda: services.minilm) if static else None)
            result = retrieve(sources, question, k, context=context, full_analysis=full_analysis, timings=timings)
    result.index = summary
    result.notes = notes
    result.dense = dense
    result.files = files
    result.index_dir = indexer.index_dir
    return result


def first_phase_note(store, final: str, total: int, background: bool = False) -> str:
    """What a search says while it reads the first phase's vectors: the embedder's own are not complete."""
    done = total - store.table.unshelved_count(final)
    maker = ("the background embedder `codeasst index` started makes them" if background
             else "`codeasst index` (or a running `codeasst serve`) makes them")
    return f"dense search uses the fast static vectors until {final}'s are complete ({done:,} of {total:,} so far); {maker}"


def dense_note(dense: dict[str, int]) -> str:
    """What a search says, once, while vectors are missing: dense search saw only part of the code."""
    return (f"not yet embedded: dense search covers {dense['embedded']:,} of {dense['total']:,} chunks, "
            f"words and exact matches cover all; `codeasst index` (or a running `codeasst serve`) embeds the rest")


def _update(services: Services, indexer: Indexer, progress: Progress | None,
            notes: list[str]) -> IndexSummary | None:
    """The index brought up to date: every file's chunks and words, and their vectors when few wait."""
    if not indexer.has_index():
        services.note(f"no index for {services.repo.root} yet: indexing it first (later runs only "
                      f"update what changed)")
    deadline = time.monotonic() + FIRST_INDEX_WAIT_S
    # While the background embedder makes the embedder's own vectors, a search leaves them to it.
    final = worker.pid(indexer.index_dir) is None
    wait_s = 0.0
    while True:
        try:
            summary = indexer.run(verify=True, embed_limit=services.settings.index.search_embed_limit, final=final,
                                  wait_s=wait_s)
            break
        except WorkerBusy:
            if not wait_s and indexer.stale():
                wait_s = WORKER_WAIT_S  # the user's edits are not in it: the worker yields at its next group
                continue
            if wait_s:
                notes.append("the index is being updated by another run; searching it as it is")
            return None  # else the index holds the files as they are: search it while the group goes on
        except IndexLocked:
            if not indexer.has_index() and time.monotonic() < deadline:
                time.sleep(0.2)  # nothing to search yet: wait a little for the run that makes the index
                continue
            # Another run is updating the index; what it has written so far is searchable.
            notes.append("the index is being updated by another run; searching it as it is")
            return None
    if summary.repaired:
        services.note(f"{summary.repaired}; mended")
    if summary.graph_note:
        services.note(summary.graph_note)
    return summary


def index_status(services: Services) -> dict:
    """What `codeasst status` shows: the index, how stale it is, whether its store agrees (which opens
    the store), and what it is built with. The server answers /v1/status with the same."""
    data = services.indexer().status(check_store=True)
    data.update(is_git=services.repo.is_git, embedder=services.embedder.name,
                store=services.settings.store.chroma_url or f"embedded Chroma in {services.repo.index_dir}")
    return data


def hits_json(hits: list[Fused]) -> list[dict]:
    return [
        {"path": f.hit.path, "start_line": f.hit.start_line, "end_line": f.hit.end_line, "symbol": f.hit.name,
         "kind": f.hit.kind, "role": f.hit.role, "score": round(f.score, 4), "sources": list(f.sources)}
        for f in hits
    ]


def search_reply(services: Services, query: str, k: int | None = None, *, use_llm: bool = True,
                 context: str | None = None, progress: Progress | None = None,
                 model_turn: Callable[[], AbstractContextManager] | None = None, scope: Scope | None = None) -> dict:
    """`codeasst search`'s answer as JSON, the same from the CLI working alone and from `codeasst serve`:
    the hits, what each stage took, notes, the index update (None when nothing was checked) and how
    much of the index has vectors."""
    result = find(services, query, k, use_llm=use_llm, context=context, progress=progress, model_turn=model_turn,
                  scope=scope)
    return {"query": query, **({"scope": scope.describe()} if scope else {}), "hits": hits_json(result.hits),
            "timings": result.timings, "notes": result.notes,
            "index": result.index.to_json() if result.index else None, "dense": result.dense}
