"""`codeasst eval`: measure quality on a data set, through the product's own entry points."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from codeasst.cli.common import Group, JsonOption, ModelOption, emit_json, make_services, note

eval_app = typer.Typer(cls=Group, help="Measure quality on a data set.", no_args_is_help=True)


def _show(report: dict, text_lines, as_json: bool) -> None:
    """An eval's report: as JSON, or its lines (`text_lines()`) as text."""
    if as_json:
        emit_json(report)
    else:
        typer.echo("\n".join(text_lines()))


@eval_app.command("retrieval")
def eval_retrieval(
    questions: Annotated[Path | None, typer.Argument(help="JSONL: repo, question, expected files, lang, split.")] = None,
    localize: Annotated[Path | None, typer.Option("--localize", help="Also the bug-report set (JSONL: repo, "
                                                  "question, expected, source), over installed packages.")] = None,
    repos: Annotated[str | None, typer.Option("--repos", help="With --localize: only these packages, "
                                              "comma-separated (indexing a big package takes minutes).")] = None,
    checkouts: Annotated[bool, typer.Option("--checkouts", help="With --localize: each report over its repository "
                                            "checked out at its base_commit, tests and docs included, from a local "
                                            "git mirror (CODEASST_MIRRORS).")] = False,
    split: Annotated[str, typer.Option("--split", help="tune, test or all (each split apart, then together); "
                                       "tune figures are in-sample.")] = "all",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows (of the split).")] = None,
    rerank: Annotated[bool, typer.Option("--rerank", help="Also score the LLM rerank stage.")] = False,
    rows_out: Annotated[Path | None, typer.Option("--rows-out", help="Append each scored row here as it is "
                                                  "scored (JSONL), so a long run cut short keeps its rows.")] = None,
    embedding_rules: Annotated[bool, typer.Option("--embedding-rules", help="Embed every chunk, and score each "
                                                  "candidate rule of which chunks get vectors (and none: lexical "
                                                  "only) as a stage, with the chunks each embeds.")] = False,
    lexical_only: Annotated[bool, typer.Option("--lexical-only", help="Embed nothing: search as it answers in a "
                                               "big repository before its vectors are done.")] = False,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Precision, recall, F1 and recall@k of each retrieval stage, per tune/test split."""
    from codeasst.evals.retrieval import evaluate, report_lines

    def progress(number: int, total: int, row: dict) -> None:
        if stderr_is_tty():
            typer.echo(f"[{number}/{total}] {row['question'][:60]} -> {', '.join(row['top'])}", err=True)

    from codeasst.console import stderr_is_tty

    flags = {"retrieval.rerank": True} if rerank else None
    report = evaluate(questions.resolve() if questions else None, split=split, limit=limit, flags=flags, model=model,
                      on_row=progress, localize=localize.resolve() if localize else None,
                      repos=[r.strip() for r in repos.split(",") if r.strip()] if repos else None,
                      checkouts=checkouts, rows_out=rows_out, embedding_rules=embedding_rules,
                      lexical_only=lexical_only)
    _show(report, lambda: report_lines(report), as_json)


@eval_app.command("ask")
def eval_ask(
    questions: Annotated[list[Path], typer.Argument(help="JSONL files: repo, question, expected files, lang, split.")],
    split: Annotated[str, typer.Option("--split", help="tune, test or all (each split apart, then together).")] = "all",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows of each file.")] = None,
    per_repo: Annotated[int | None, typer.Option("--per-repo", min=1,
                                                 help="Only the first N rows of each repository.")] = None,
    systems: Annotated[str, typer.Option("--systems", help="Comma-separated: checked, grounded, baseline.")] = (
        "grounded,checked"),
    out: Annotated[Path | None, typer.Option("--out", help="Write per-answer results here (JSONL).")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cited, on-target and grounded-identifier rates and first-token time of ask's answer systems."""
    from codeasst.console import stderr_is_tty
    from codeasst.evals.ask import evaluate, report_lines

    def progress(number: int, total: int, s) -> None:
        if stderr_is_tty():
            typer.echo(f"[{number}/{total}] {s.system}: correct {s.correct}, facts {len(s.stated)}/{s.facts}, "
                       f"wrong {len(s.wrong)}, abstained {s.abstained}, on target {s.on_target}, "
                       f"{len(s.ungrounded)} of {s.identifiers} names not found, first token {s.first_token_s} s",
                       err=True)

    report = evaluate([q.resolve() for q in questions], split=split, limit=limit, per_repo=per_repo, model=model, out=out,
                      systems=[name.strip() for name in systems.split(",") if name.strip()], on_answer=progress)
    _show(report, lambda: report_lines(report), as_json)


@eval_app.command("relations")
def eval_relations(
    data: Annotated[Path, typer.Argument(help="JSONL: repo, sentence, cited files, true (the label), kind, origin.")],
    as_json: JsonOption = False,
) -> None:
    """How many false relations the answer check leaves out, and how many true ones."""
    from codeasst.evals.relations import evaluate, report_lines

    report = evaluate(data.resolve())
    _show(report, lambda: report_lines(report), as_json)


@eval_app.command("fix")
def eval_fix(
    data: Annotated[Path, typer.Argument(help="JSONL: code, flake8 feedback, test_setup_code, tests.")],
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows.")] = None,
    systems: Annotated[str, typer.Option(
        "--systems", help="Comma-separated: none (the code unchanged), autopep8, raw, pipeline.")] = (
        "none,autopep8,raw,pipeline"),
    out: Annotated[Path | None, typer.Option("--out", help="Write per-row results here (JSONL).")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Clean, kept and AST-unchanged rates of fix and its baselines, run side by side."""
    from codeasst.evals.fix import evaluate

    services = make_services(Path("."), model=model, about_repo=False)
    chosen = [name.strip() for name in systems.split(",") if name.strip()]
    report = evaluate(services, data.resolve(), systems=chosen, limit=limit, out=out)
    _show(report.to_json(), lambda: report.lines(), as_json)


@eval_app.command("fim")
def eval_fim(
    data: Annotated[Path, typer.Argument(help="JSONL: task_id, prefix, suffix, ground_truth, unit_tests.")],
    split: Annotated[str, typer.Option("--split", help="tune, test or all (by a hash of task_id).")] = "test",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only N rows (a stable sample).")] = None,
    rows: Annotated[str, typer.Option("--rows", help="all, block, control, or single-line (block rows whose hole "
                                      "is one line, the cursor at its start).")] = "all",
    cursor: Annotated[str, typer.Option("--cursor", help="indent (after the line's indentation, as the row gives "
                                        "it) or line-start (column 1; the indentation goes into the hole).")]
    = "indent",
    out: Annotated[Path | None, typer.Option("--out", help="Write per-row results here (JSONL).")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Completion scored by execution: `complete` itself against the raw model (plain FIM, first line)."""
    import time

    from codeasst.evals import fim

    services = make_services(Path("."), model=model, about_repo=False)
    chosen = fim.load(data.resolve(), split, limit, rows, cursor)
    options = fim.eval_options(services)
    started = time.perf_counter()
    outcomes = fim.generate_all(services, chosen, options, on_row=lambda n, total: typer.echo(
        f"[{n}/{total}]", err=True) if n % 25 == 0 else None)
    result = fim.report(chosen, outcomes, options, split, time.perf_counter() - started, services.complete_llm.name,
                        kind=rows, cursor=cursor)
    if out:
        fim.write_rows(out, chosen, outcomes)
    _show(fim.to_json(result), lambda: fim.lines(result), as_json)


@eval_app.command("unittest")
def eval_unittest(
    repo: Annotated[str, typer.Argument(help="A directory with a pytest suite, or NAME==VERSION (its sdist, "
                                        "fetched from PyPI once).")],
    tests: Annotated[str | None, typer.Option("--tests", help="The suite's pytest arguments, relative to REPO "
                                              "(default: tests/ or test/ if there, else all of REPO).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Mask N functions (a stable sample).")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Another seed, another sample.")] = 0,
    test_timeout: Annotated[float, typer.Option("--test-timeout", min=1, help="Seconds per test run.")] = 60.0,
    out: Annotated[Path | None, typer.Option("--out", help="Write per-row results here (JSONL).")] = None,
    recent_tests: Annotated[bool, typer.Option("--recent-tests", help="complete's ring buffer of recent files holds "
                                               "the first test that runs the line, as if the user came from it "
                                               "(with complete.context_tokens > 0 and 'recent' a source).")] = False,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Completion scored by a repository's own tests: a masked statement, the tests that run it."""
    from codeasst.evals import unittest_metric

    services = make_services(Path("."), model=model, about_repo=False)
    result = unittest_metric.evaluate(
        services, repo, tests=tests, limit=limit, seed=seed, test_timeout_s=test_timeout, on_note=note,
        recent_tests=recent_tests,
        on_row=lambda n, total, row: typer.echo(f"[{n}/{total}] {row.file}::{row.function} line {row.line}: "
                                                f"{row.status}", err=True))
    if out:
        unittest_metric.write_rows(out, result["rows"])
    _show(unittest_metric.to_json(result), lambda: unittest_metric.lines(result), as_json)


@eval_app.command("fix-modules")
def eval_fix_modules(
    data: Annotated[Path, typer.Argument(help="A TOML set of packages and files (tests/data/fix/modules.toml), "
                                         "or a directory of .py files.")],
    systems: Annotated[str, typer.Option(
        "--systems", help="Comma-separated: none (the files unchanged), autopep8, ruff, pipeline.")] = (
        "none,autopep8,ruff,pipeline"),
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Run the pipeline without the model.")] = False,
    only: Annotated[str | None, typer.Option("--only", help="Comma-separated package names or files.")] = None,
    no_tests: Annotated[bool, typer.Option("--no-tests", help="Skip the packages' own tests.")] = False,
    test_timeout: Annotated[float, typer.Option("--test-timeout", min=1, help="Seconds per test run.")] = 300.0,
    out: Annotated[Path | None, typer.Option("--out", help="Write per-file results here (JSONL).")] = None,
    keep: Annotated[Path | None, typer.Option("--keep", help="Write each fixed file to DIR/SYSTEM/PACKAGE/FILE.")] = None,
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Clean, public names, docs and tests kept when fix and its baselines fix real modules."""
    from codeasst.console import stderr_is_tty
    from codeasst.evals.fix_modules import FileResult, evaluate

    def progress(number: int, total: int, r: FileResult) -> None:
        if stderr_is_tty():
            typer.echo(f"[{number}/{total}] {r.file} {r.system}: {r.left} of {r.before} left, "
                       f"{r.seconds:.1f} s", err=True)

    services = make_services(Path("."), model=model, about_repo=False)
    report = evaluate(services, data.resolve(), systems=[s.strip() for s in systems.split(",") if s.strip()],
                      use_llm=not no_llm, only=[s.strip() for s in (only or "").split(",") if s.strip()],
                      run_tests=not no_tests, test_timeout_s=test_timeout, out=out, keep=keep, progress=progress)
    _show(report.to_json(), lambda: report.lines(), as_json)
