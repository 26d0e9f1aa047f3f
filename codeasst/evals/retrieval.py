"""`codeasst eval retrieval QUESTIONS.jsonl`: precision, recall, F1 and recall@k of
each retrieval stage (each retriever alone, fused, reranked), at the file level.

Precision, recall and F1 are over the files a user is shown. Every stage is
presented alike (`fuse.present`): its ranking in reciprocal-rank form, at most
per_file hits per file, at most k hits, and only hits scoring at least
min_score_ratio of its best. Stages thus differ only in how they rank.
recall@k is over each stage's whole ranking of files.

A row: {"repo": "click", "question": "...", "expected": ["core.py"], "lang": "en", "split": "test"}.
`repo` is one of:
- a directory, relative to the JSONL file;
- `npm:NAME@VERSION[/SUBDIR]`: that published npm package, fetched once with `npm pack`;
- the name of an installed Python package.
The last two are copied into a fresh git repository in the cache.

`split` is `tune` (rows settings may be chosen on: their figures are in-sample) or
`test` (rows kept out of every such choice). Each split is reported apart, and all together.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst import paths
from codeasst.config import RetrievalSettings
from codeasst.errors import CodeasstError, UsageError
from codeasst.index.store import Hit
from codeasst.retrieve import intent
from codeasst.retrieve.fuse import Fused, as_fused, present
from codeasst.retrieve.pipeline import Retrieval, fuse
from codeasst.services import Services, build_services
from codeasst.tasks.search import find

RECALL_AT = (1, 3, 5, 10)
SINGLE = ("dense", "dense-en", "hyde", "rg", "bm25-chunks", "bm25-files")
# Retrievers of long queries (codeasst.retrieve.reports), scored alone where a row used them.
LONG_SINGLE = ("named", "definitions", "quotes", "bm25")
BASELINE = "bm25-files baseline"
# Search as it was before issue 28 (no file roles, no BM25 over chunks), from the same run's rankings.
ROLES_OFF = "fused, before issue 28"
NO_CHUNK_BM25 = "fused without bm25-chunks"  # this search with roles, less BM25 over chunks
NO_FILE_BM25 = "fused without bm25-files"  # this search with roles, less BM25 over whole files
DEFINITIONS_AT = (1, 5, 10)
SPLITS = ("tune", "test")
SPLIT_CHOICES = ("all", *SPLITS)
# An exact version only: a range would let the code under the questions change between runs.
NPM_SPEC = re.compile(r"npm:(?P<name>(?:@[\w.-]+/)?[\w.-]+)@(?P<version>\d+\.\d+\.\d+[\w.+-]*)"
                      r"(?:/(?P<sub>[\w.-]+(?:/[\w.-]+)*))?")
NPM_TIMEOUT_S = 300


@dataclass
class StageScores:
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    recall_at: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, shown_files: list[str], ranked: list[str], expected: set[str]) -> None:
        """`shown_files`: the files of the hits a user gets; `ranked`: every file, best first."""
        found = len(expected & set(shown_files))
        p = found / len(shown_files) if shown_files else 0.0
        r = found / len(expected)
        self.precision.append(p)
        self.recall.append(r)
        self.f1.append(2 * p * r / (p + r) if p + r else 0.0)
        for k in RECALL_AT:
            self.recall_at[k].append(len(expected & set(ranked[:k])) / len(expected))

    definitions_at: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add_definitions(self, chunks: list[tuple[str, str]], wanted: dict[str, list[str]]) -> None:
        """Whether a definition the answer needs is among the first k chunks (function-level)."""
        for k in DEFINITIONS_AT:
            self.definitions_at[k].append(float(any(defines(c, wanted) for c in chunks[:k])))

    def summary(self) -> dict[str, float]:
        def mean(xs: list[float]) -> float:
            return round(sum(xs) / len(xs), 4) if xs else 0.0

        out = {"precision": mean(self.precision), "recall": mean(self.recall), "f1": mean(self.f1)}
        out.update({f"recall@{k}": mean(self.recall_at[k]) for k in RECALL_AT})
        out["rows"] = len(self.f1)  # a stage that runs on some rows only is scored on those
        if self.definitions_at:
            out.update({f"definition@{k}": mean(self.definitions_at[k]) for k in DEFINITIONS_AT})
            out["definition_rows"] = len(self.definitions_at[DEFINITIONS_AT[0]])
        return out


@dataclass
class Scored:
    """One question's outcome, kept per row so that any subset (a split, a repo) can be summarised."""

    row: dict
    shown: dict[str, list[str]]  # stage -> the files a user is shown
    ranked: dict[str, list[str]]  # stage -> every file it ranked, best first
    seconds: float
    # stage -> its first chunks as (path, canonical name), for the definitions the answer needs
    chunks: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def ranked_files(hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(hit.path for hit in hits))


def stages_of(result: Retrieval, cfg: RetrievalSettings,
              lexical: dict[str, set[str]] | None = None) -> dict[str, list[Fused]]:
    """Each stage's ranking in fused form: every retriever that ran alone, fused, fused without
    HyDE (what skipping it would cost), and reranked. A retriever the pipeline skipped on this
    query (HyDE and rg on a long one) is no stage of it: "not run" is not a ranking that found
    nothing, and scoring it as one would drag that retriever's figures down."""
    stages = {name: as_fused(result.rankings[name], name)
              for name in (*SINGLE, *LONG_SINGLE) if name in result.rankings}
    if "dense-en" not in result.rankings:  # an English question: its English query is the question
        stages["dense-en"] = stages["dense"]
    stages["fused"] = result.fused
    long = "bm25" in result.rankings  # only long queries run BM25
    # The other rankings fused: search as it was before roles and BM25 over chunks (issue 28).
    rest = fuse({k: v for k, v in result.rankings.items() if k != "bm25-chunks"}, cfg, long)
    if cfg.roles:
        stages[ROLES_OFF] = rest
    if "bm25-chunks" in result.rankings:
        stages[NO_CHUNK_BM25] = intent.weigh(rest, result.intent) if cfg.roles else rest
    if "bm25-files" in result.rankings:  # search before the file stage (issue 35)
        before = fuse({k: v for k, v in result.rankings.items() if k != "bm25-files"}, cfg, long)
        stages[NO_FILE_BM25] = intent.weigh(before, result.intent) if cfg.roles else before
    if "hyde" in result.rankings:
        stages["fused without hyde"] = fuse({k: v for k, v in result.rankings.items() if k != "hyde"}, cfg, long)
    if result.reranked is not None:
        stages["reranked"] = result.reranked
    if lexical is not None:  # eval retrieval --embedding-rules
        from codeasst.evals import embedding_rules

        stages.update(embedding_rules.stages(result, cfg, lexical))
    return stages


def score(row: dict, result: Retrieval, cfg: RetrievalSettings, seconds: float,
          lexical: dict[str, set[str]] | None = None) -> Scored:
    """What each stage that ran on this row shows a user, and how it ranks every file."""
    shown, ranked, chunks = {}, {}, {}
    for stage, ranking in stages_of(result, cfg, lexical).items():
        shown[stage] = ranked_files([f.hit for f in present(ranking, cfg.k, cfg.per_file, cfg.min_score_ratio)])
        ranked[stage] = ranked_files([f.hit for f in ranking])
        chunks[stage] = [(f.hit.path, f.hit.name) for f in ranking[: max(DEFINITIONS_AT)]]
    return Scored(row, shown, ranked, seconds, chunks)


def wanted_definitions(row: dict) -> dict[str, list[str]]:
    """The definitions a row's answer needs, per file: `definitions` (question sets) or
    `expected_spans` (the localization set), both keyed by repository-relative path."""
    spans = row.get("definitions") or row.get("expected_spans") or {}
    return {path: names for path, names in spans.items() if names}


def defines(chunk: tuple[str, str], wanted: dict[str, list[str]]) -> bool:
    """Whether a chunk (path, canonical name) is one of the wanted definitions. Canonical names
    start with the module (`core.Option.resolve`); a wanted `Option.resolve` or `resolve` is its tail."""
    path, name = chunk
    return any(name == want or name.endswith("." + want) for want in wanted.get(path, ()))


def jsonl_rows(path: Path, keys: tuple[str, ...], kind: str) -> list[tuple[int, dict]]:
    """(line number, row) of a JSONL data file whose rows each have `keys`; a missing file or a row
    that is not one is a usage error naming the line."""
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            _ = [row[key] for key in keys]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a {kind} row ({exc})") from None
        rows.append((number, row))
    return rows


def load_rows(path: Path) -> list[dict]:
    rows = jsonl_rows(path, ("repo", "question", "expected"), "question")
    for number, row in rows:
        if row.get("split", "test") not in SPLITS:
            raise UsageError(f"{path}:{number}: split must be one of {', '.join(SPLITS)}, not {row['split']!r}")
    return [row for _, row in rows]


def _git_init(path: Path) -> None:
    # A repository of its own, so the indexer's file selection starts at this tree and no parent's rules apply.
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def npm_source(spec: str) -> Path:
    """`npm:NAME@VERSION[/SUBDIR]`: SUBDIR (else the whole package) of that published package, as a
    git repository in the cache, fetched with `npm pack` on first use. Published packages often ship
    compiled output (`build/`, `dist/`) beside their sources, which would double every hit: SUBDIR
    picks the sources."""
    match = NPM_SPEC.fullmatch(spec)
    if not match or any(part in (".", "..") for part in (match["sub"] or "").split("/")):
        raise UsageError(f"repo {spec!r}: expected npm:NAME@VERSION[/SUBDIR] with an exact version, "
                         "e.g. npm:@tanstack/query-core@5.108.0/src")
    name, version, sub = match["name"], match["version"], match["sub"]
    slug = f"{name.replace('/', '+')}@{version}" + (f"-{sub.replace('/', '+')}" if sub else "")
    dest = paths.cache_dir() / "eval-repos" / "npm" / slug
    if dest.is_dir():  # only ever created complete, by the rename below
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        try:
            subprocess.run(["npm", "pack", f"{name}@{version}", "--ignore-scripts", "--pack-destination", str(work)],
                           cwd=work, capture_output=True, text=True, check=True, timeout=NPM_TIMEOUT_S)
        except FileNotFoundError:
            raise CodeasstError(f"cannot fetch {spec}: npm is not installed") from None
        except subprocess.TimeoutExpired:
            raise CodeasstError(f"cannot fetch {spec}: npm pack gave no answer in {NPM_TIMEOUT_S} s") from None
        except subprocess.CalledProcessError as exc:
            raise CodeasstError(f"cannot fetch {spec}: {_npm_error(exc.stderr)}") from None
        tarballs = list(work.glob("*.tgz"))
        if len(tarballs) != 1:
            raise CodeasstError(f"cannot fetch {spec}: npm pack left {len(tarballs)} tarballs, expected one")
        try:
            with tarfile.open(tarballs[0]) as archive:
                archive.extractall(work / "x", filter="data")  # "data": no links or paths out of the folder
        except tarfile.TarError as exc:
            raise CodeasstError(f"cannot fetch {spec}: the tarball cannot be unpacked ({exc})") from None
        # npm puts everything under package/, but some old tarballs use another single top folder.
        tops = [p for p in (work / "x").iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise CodeasstError(f"cannot fetch {spec}: the tarball does not hold one top folder")
        source = tops[0] / (sub or "")
        if not source.is_dir():
            raise UsageError(f"repo {spec!r}: the package has no {sub}/ folder")
        _git_init(source)
        source.rename(dest)
    return dest


def _npm_error(stderr: str) -> str:
    """The line of npm's error output that says what went wrong (not its error code or log path)."""
    lines = [line.removeprefix("npm error").strip() for line in stderr.splitlines() if line.startswith("npm error")]
    useful = [line for line in lines if line and not line.startswith(("code ", "A complete log"))]
    return useful[0] if useful else (stderr.strip().splitlines() or ["npm pack failed"])[-1]


GITHUB_SPEC = re.compile(r"github:(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)@(?P<commit>[0-9a-f]{40})")
SELF_SPEC = re.compile(r"self@(?P<commit>[0-9a-f]{7,40})")
# What holds the answers to questions over codeasst itself: never in the copy it is asked over.
ANSWER_KEYS = ("tests/data/retrieval", "tests/data/ask", "docs/benchmarks.md")


def mirrors_dir() -> Path:
    """Where bare git mirrors of GitHub repositories are looked up: CODEASST_MIRRORS, as
    OWNER+NAME/repo (or OWNER+NAME.git) under it. Nothing is cloned from the network."""
    return Path(os.environ.get("CODEASST_MIRRORS", "/work/.mirror"))


def _archive(git_dir: Path, commit: str, dest: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """The tree of `commit` (no history, nothing of the working copy) as a fresh repository at dest."""
    if dest.is_dir():  # only ever created complete, by the rename below
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit],
                                 capture_output=True, check=False)
        if archive.returncode != 0:
            raise CodeasstError(f"cannot check out {commit} from {git_dir}: "
                                f"{archive.stderr.decode(errors='replace').strip()[:200]}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tarred:
            tarred.extractall(tree, filter="data")
        for part in leave_out:
            target = tree / part
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        _git_init(tree)
        tree.rename(dest)
    return dest


def github_source(spec: str) -> Path:
    """`github:OWNER/NAME@COMMIT`: the whole tree at that commit (tests, docs and all, as a user
    clones it), from a local mirror (mirrors_dir)."""
    match = GITHUB_SPEC.fullmatch(spec)
    if not match:
        raise UsageError(f"repo {spec!r}: expected github:OWNER/NAME@COMMIT with a full 40-digit commit")
    slug = f"{match['owner']}+{match['name']}"
    candidates = [mirrors_dir() / slug / "repo", mirrors_dir() / f"{slug}.git"]
    git_dir = next((c for c in candidates if c.is_dir()), None)
    if git_dir is None:
        raise CodeasstError(f"cannot fetch {spec}: no mirror at {candidates[0]} (set CODEASST_MIRRORS)")
    dest = paths.cache_dir() / "eval-repos" / "github" / f"{slug}@{match['commit'][:12]}"
    return _archive(git_dir, match["commit"], dest)


def self_source(spec: str) -> Path:
    """`self@COMMIT`: codeasst's own repository at that commit, without the files that hold the
    answers to questions about it (ANSWER_KEYS)."""
    match = SELF_SPEC.fullmatch(spec)
    if not match:
        raise UsageError(f"repo {spec!r}: expected self@COMMIT")
    own = Path(__file__).resolve().parents[2]
    if not (own / ".git").exists():
        raise CodeasstError(f"cannot check out {spec}: codeasst is not running from its git repository")
    dest = paths.cache_dir() / "eval-repos" / "self" / match["commit"][:12]
    return _archive(own / ".git", match["commit"], dest, ANSWER_KEYS)


def pypi_source(spec: str) -> Path:
    """`pypi:NAME==VERSION`: that release's source distribution (its tests, docs and examples with
    it), unpacked without running anything of it, as a fresh repository."""
    from codeasst.evals.packages import fetch

    requirement = spec.removeprefix("pypi:")
    dest = paths.cache_dir() / "eval-repos" / "pypi" / requirement.replace("==", "-")
    if not dest.is_dir():
        unpacked = fetch(requirement)
        with tempfile.TemporaryDirectory(dir=paths.cache_dir(), prefix=".copy-") as tmp:
            tree = Path(tmp) / "tree"
            shutil.copytree(unpacked, tree)
            _git_init(tree)
            dest.parent.mkdir(parents=True, exist_ok=True)
            tree.rename(dest)
    return dest


def repo_dir(spec: str, base: Path) -> Path:
    """The repository a row names: a directory, a pinned npm package, a PyPI sdist, a GitHub
    commit, codeasst itself at a commit, or an installed Python package (copied into the cache)."""
    if spec.startswith("npm:"):
        return npm_source(spec)
    if spec.startswith("pypi:"):
        return pypi_source(spec)
    if spec.startswith("github:"):
        return github_source(spec)
    if spec.startswith("self@"):
        return self_source(spec)
    candidate = (base / spec).resolve()
    if candidate.is_dir():
        return candidate
    try:
        found = importlib.util.find_spec(spec)
    except (ImportError, ValueError):  # "a.b" with no package "a", or a name that is no module name
        found = None
    if not found or not found.submodule_search_locations:
        raise UsageError(f"repo {spec!r} is neither a directory, an npm:NAME@VERSION nor an installed package")
    source = Path(next(iter(found.submodule_search_locations)))
    dest = paths.cache_dir() / "eval-repos" / spec
    if not (dest / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        _git_init(dest)
    return dest


def scored_rows(path: Path) -> list[Scored]:
    """The rows an `evaluate(rows_out=path)` run wrote, for `summarise`."""
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Scored(**{**item, "chunks": {k: [tuple(c) for c in v] for k, v in item["chunks"].items()}})
            for item in items]


def summarise(scored: list[Scored]) -> dict:
    """The figures for some rows: per stage, per language and per repository."""
    from codeasst.index.roles import role_of

    stages: dict[str, StageScores] = defaultdict(StageScores)
    by_lang: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    by_repo: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    by_role: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    by_intent: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    repo_rows: dict[str, int] = defaultdict(int)
    role_rows: dict[str, int] = defaultdict(int)
    intent_rows: dict[str, int] = defaultdict(int)
    for item in scored:
        expected = set(item.row["expected"])
        lang = "en" if item.row.get("lang", "en") == "en" else "zh/ru"
        # The role of the file that answers (by path alone: the role a reader sees in it).
        role = role_of(min(expected))
        wanted = wanted_definitions(item.row)
        repo_rows[item.row["repo"]] += 1
        role_rows[role] += 1
        buckets_of = [by_lang[lang], by_repo[item.row["repo"]], by_role[role]]
        if "intent" in item.row:
            intent_rows[item.row["intent"]] += 1
            buckets_of.append(by_intent[item.row["intent"]])
        for stage, shown in item.shown.items():
            for bucket in (stages, *buckets_of):
                bucket[stage].add(shown, item.ranked[stage], expected)
                if wanted and stage in item.chunks:
                    bucket[stage].add_definitions(item.chunks[stage], wanted)
    block = {
        "rows": len(scored),
        "in_sample_rows": sum(item.row.get("split") == "tune" for item in scored),
        "stages": {name: s.summary() for name, s in stages.items()},
        "by_language": {lang: {name: s.summary() for name, s in st.items()} for lang, st in by_lang.items()},
        "by_repo": _groups(by_repo, repo_rows),
        "by_answer_role": _groups(by_role, role_rows),
        "by_intent": _groups(by_intent, intent_rows),
        "mean_retrieval_s": round(sum(s.seconds for s in scored) / len(scored), 3) if scored else 0.0,
    }
    fused = block["stages"].get("fused", {})
    baseline = block["stages"].get(BASELINE)
    if baseline:
        block["fused_above_baseline_at_every_k"] = all(fused.get(f"recall@{k}", 0) > baseline[f"recall@{k}"]
                                                       for k in RECALL_AT)
    block["fused_against"] = _fused_against(scored)
    block["fused_beats_every_single_retriever"] = all(
        versus["fused"]["f1"] > versus["alone"]["f1"] and versus["fused"]["recall@5"] > versus["alone"]["recall@5"]
        for versus in block["fused_against"].values()
    )
    return block


def _groups(scores: dict[str, dict[str, StageScores]], rows: dict[str, int]) -> dict[str, dict]:
    return {name: {"rows": rows[name], "stages": {stage: s.summary() for stage, s in st.items()}}
            for name, st in scores.items()}


def _fused_against(scored: list[Scored]) -> dict[str, dict]:
    """Fused against each single retriever, on the rows where that retriever ran only: on the
    others fused had inputs the retriever never had a chance at."""
    out = {}
    for name in (*SINGLE, *LONG_SINGLE):
        both = [item for item in scored if name in item.shown and "fused" in item.shown]
        if not both:
            continue
        alone, fused = StageScores(), StageScores()
        for item in both:
            expected = set(item.row["expected"])
            alone.add(item.shown[name], item.ranked[name], expected)
            fused.add(item.shown["fused"], item.ranked["fused"], expected)
        out[name] = {"rows": len(both), "fused": fused.summary(), "alone": alone.summary()}
    return out


def evaluate(path: Path | None, *, split: str = "all", limit: int | None = None, flags: dict | None = None,
             model: str | None = None, on_row: Callable[[int, int, dict], None] | None = None,
             localize: Path | None = None, repos: list[str] | None = None, checkouts: bool = False,
             rows_out: Path | None = None, embedding_rules: bool = False, lexical_only: bool = False) -> dict:
    """Score every row of `split` (the first `limit` of them). The report's top level holds the
    figures for those rows; with `split="all"` on a file that marks splits, `splits` holds each apart.
    `localize`: also the localization set (codeasst.evals.localize), under "localize"; `repos`
    limits it to those packages; `checkouts` runs each report on its repository checked out at
    its base_commit, tests and docs included, rather than on the installed package. `rows_out`: each
    scored row is appended there as it is scored (JSONL, `Scored`'s fields), so that a long run cut
    short still leaves what it measured (`scored_rows` reads it back for `summarise`). `embedding_rules`:
    every chunk embedded, and each candidate rule of which chunks get vectors scored as a stage of
    its own (codeasst.evals.embedding_rules), with the chunks it embeds under "embedding_rules".
    `lexical_only`: nothing embedded, as search answers in a big repository before `codeasst index`
    or `serve` has embedded anything (its dense rankings are then empty)."""
    if embedding_rules:
        from codeasst.evals.embedding_rules import EMBED_ALL

        flags = {**(flags or {}), **EMBED_ALL}
    if split not in SPLIT_CHOICES:
        raise UsageError(f"--split must be one of {', '.join(SPLIT_CHOICES)}, not {split!r}")
    if path is None and localize is None:
        raise UsageError("give a question file, --localize FILE, or both")
    report: dict = {}
    if path is not None:
        rows = [row for row in load_rows(path) if split == "all" or row.get("split") == split][:limit]
        if not rows:
            raise UsageError(f"{path}: no question rows" + (f' with "split": "{split}"' if split != "all" else ""))
        report = _report(rows, split, lambda spec: repo_dir(spec, path.parent), flags, model, on_row, rows_out=rows_out,
                         rules=embedding_rules, lexical_only=lexical_only)
    if localize is not None:
        from codeasst.evals.localize import Checkouts, assign_splits, checkout_rows, repo_copy, usable_rows

        every = [row for row in assign_splits(load_rows(localize)) if split == "all" or row["split"] == split]
        kept, dropped = checkout_rows(every, repos) if checkouts else usable_rows(every, repos)
        rows = kept[:limit]
        if not rows:
            raise UsageError(f"{localize}: no scorable rows ({dropped or 'none in this split'})")
        if checkouts:
            trees = Checkouts()
            block = _report(rows, split, trees.tree, flags, model, on_row, switch=trees.switch, rows_out=rows_out,
                            rules=embedding_rules, lexical_only=lexical_only)
        else:
            block = _report(rows, split, repo_copy, flags, model, on_row, rows_out=rows_out, rules=embedding_rules,
                            lexical_only=lexical_only)
        block["dropped"] = dropped
        block["trees"] = "checkouts at each report's base_commit" if checkouts else "installed packages, no tests"
        report = {**report, "localize": block} if report else {"localize": block}
    return report


def _report(rows: list[dict], split: str, repo_for: Callable[[str], Path], flags: dict | None, model: str | None,
            on_row: Callable[[int, int, dict], None] | None, switch: Callable[[dict], bool] | None = None,
            rows_out: Path | None = None, rules: bool = False, lexical_only: bool = False) -> dict:
    """`switch(row)` puts the row's repository at the row's commit, True when that changed the tree:
    the index is then brought up to date before the row is asked."""
    from codeasst.evals import embedding_rules
    from codeasst.retrieve.bm25 import FileBM25, plain_tokens

    services_for: dict[str, Services] = {}
    baseline_for: dict[str, FileBM25] = {}
    lexical_for: dict[str, dict[str, set[str]]] = {}
    embedded_for: dict[str, dict[str, dict[str, int]]] = {}
    scored: list[Scored] = []
    for number, row in enumerate(rows, start=1):
        moved = switch(row) if switch else False
        if row["repo"] not in services_for or moved:
            if row["repo"] not in services_for:
                services_for[row["repo"]] = build_services(repo_for(row["repo"]), flags, model=model)
            services = services_for[row["repo"]]
            indexer = services.indexer()
            indexer.run(embed_limit=0 if lexical_only else None)
            baseline_for[row["repo"]] = FileBM25.for_files(services.repo.root, indexer.indexed_files(),
                                                           tokenize=plain_tokens)
            if rules:
                entries = indexer._entries()
                lexical_for[row["repo"]] = embedding_rules.lexical_paths(entries)
                embedded_for[row["repo"]] = embedding_rules.embedded_counts(entries, lexical_for[row["repo"]])
        services = services_for[row["repo"]]
        started = time.perf_counter()
        result = find(services, row["question"], update_index=False)  # indexed above, once per repo
        seconds = time.perf_counter() - started
        item = score(row, result, services.settings.retrieval, seconds, lexical_for.get(row["repo"]))
        # The baseline ranks files, not chunks: it is shown as its top k files.
        item.ranked[BASELINE] = [p for p, _ in baseline_for[row["repo"]].rank(row["question"], 50)]
        item.shown[BASELINE] = item.ranked[BASELINE][: services.settings.retrieval.k]
        scored.append(item)
        if rows_out is not None:
            with rows_out.open("a", encoding="utf-8") as out:
                out.write(json.dumps(asdict(item)) + "\n")
        if on_row:
            on_row(number, len(rows), {"question": row["question"], "top": item.ranked["fused"][:3],
                                       "expected": row["expected"]})
    report = {"split": split, "shown": "files shown: top k hits, per-file cap, score cutoff, alike for every stage",
              **summarise(scored)}
    if rules:
        report["embedding_rules"] = embedded_for  # repository -> rule stage -> chunks, embedded
    if lexical_only:
        report["lexical_only"] = True
    marked = {row["split"] for row in rows if "split" in row}
    if split == "all" and marked:
        # Rows with no split mark count only towards "all".
        report["splits"] = {name: summarise([s for s in scored if s.row.get("split") == name])
                            for name in ("test", "tune") if name in marked}
    return report


def _title(name: str, block: dict) -> str:
    if name == "tune":
        return (f"tune split, {block['rows']} questions: IN-SAMPLE (the settings are chosen on these rows, "
                "so these figures flatter them)")
    if name == "test":
        return f"test split, {block['rows']} questions: held out, as long as no setting is chosen on them"
    if block["in_sample_rows"]:
        return (f"all {block['rows']} questions, of which {block['in_sample_rows']} in-sample (tune split): "
                "partly in-sample")
    return f"all {block['rows']} questions"


def _block_lines(title: str, block: dict) -> list[str]:
    columns = ["precision", "recall", "f1", *(f"recall@{k}" for k in RECALL_AT)]
    lines = [title, "| stage | rows | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for name, scores in block["stages"].items():
        lines.append(f"| {name} | {scores['rows']} | " + " | ".join(f"{scores[c]:.3f}" for c in columns) + " |")
    for lang, stages in block["by_language"].items():
        f1 = ", ".join(f"{name} {s['f1']:.3f}" for name, s in stages.items())
        lines.append(f"F1 for {lang} questions: {f1}")
    for key, label in (("by_repo", "repository"), ("by_answer_role", "role of the answer"), ("by_intent", "intent")):
        groups = block.get(key, {})
        if len(groups) > 1 or (groups and key != "by_repo"):
            compared = [s for s in ("fused", NO_FILE_BM25, NO_CHUNK_BM25, ROLES_OFF, BASELINE) if s in block["stages"]]
            lines.append(f"by {label}: recall@1 / recall@5 of " + ", ".join(compared))
            for group, entry in groups.items():
                figures = [f"{s} {entry['stages'][s]['recall@1']:.3f} / {entry['stages'][s]['recall@5']:.3f}"
                           for s in compared if s in entry["stages"]]
                lines.append(f"  {group} ({entry['rows']}): " + "; ".join(figures))
    with_defs = {name: sc for name, sc in block["stages"].items()
                 if sc.get("definition_rows") and name in ("fused", ROLES_OFF, "dense", "bm25")}
    if with_defs:
        rows = next(iter(with_defs.values()))["definition_rows"]
        lines.append(f"a definition the answer needs in the first 1 / 5 chunks ({rows} rows that name one): "
                     + "; ".join(f"{name} {sc['definition@1']:.3f} / {sc['definition@5']:.3f}"
                                 for name, sc in with_defs.items()))
    for name, versus in block["fused_against"].items():
        if versus["rows"] < block["rows"]:
            lines.append(f"{name} ran on {versus['rows']} of {block['rows']} questions; on those, fused F1 "
                         f"{versus['fused']['f1']:.3f} against {versus['alone']['f1']:.3f}, recall@5 "
                         f"{versus['fused']['recall@5']:.3f} against {versus['alone']['recall@5']:.3f}")
    lines.append(f"fused beats every single retriever on F1 and recall@5, each on the rows where it ran: "
                 f"{'yes' if block['fused_beats_every_single_retriever'] else 'NO'}")
    if "fused_above_baseline_at_every_k" in block:
        lines.append(f"fused recall above the {BASELINE} at every k: "
                     f"{'yes' if block['fused_above_baseline_at_every_k'] else 'NO'}")
    return lines


def report_lines(report: dict) -> list[str]:
    lines = []
    if "stages" in report:
        lines += _set_lines(report)
    if "localize" in report:
        block = report["localize"]
        dropped = ", ".join(f"{n} ({why})" for why, n in block["dropped"].items()) or "none"
        lines += ["", f"LOCALIZATION SET (bug reports; file the fix edited); rows dropped: {dropped}",
                  *_set_lines(block)]
    return lines


def _set_lines(report: dict) -> list[str]:
    lines = [f"precision/recall/F1 over the {report['shown']}; mean retrieval {report['mean_retrieval_s']:.2f} s"
             + ("; LEXICAL ONLY: nothing embedded, dense search found nothing" if report.get("lexical_only") else "")]
    for repo, rules in report.get("embedding_rules", {}).items():
        lines.append(f"chunks embedded in {repo}: " + "; ".join(f"{name.removeprefix('fused, ')} {n['embedded']:,} "
                                                                 f"of {n['chunks']:,}" for name, n in rules.items()))
    for name, block in report.get("splits", {}).items():
        lines += ["", *_block_lines(_title(name, block), block)]
    lines += ["", *_block_lines(_title(report["split"], report), report)]
    return lines
