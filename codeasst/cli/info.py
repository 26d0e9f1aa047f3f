"""What codeasst has and where: `models`, `stats`, `config`, `paths`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from codeasst.cli.common import JsonOption, ModelOption, RepoOption, emit_json, make_services
from codeasst.errors import UsageError


def stats(as_json: JsonOption = False) -> None:
    """Accept Rate, Discard Rate and Happiness of inline suggestions, per model variant and day."""
    from codeasst.wire.events import EventStore

    store = EventStore.open_default()
    days = store.days()
    if as_json:
        emit_json([{"variant": d.variant, "day": d.day, "shown": d.shown, "accepted": d.accepted,
                    "discarded": d.discarded, "accept_rate": round(d.accept_rate, 4),
                    "discard_rate": round(d.discard_rate, 4), "happiness": round(d.happiness, 3)} for d in days])
        return
    if not days:
        typer.echo("no suggestion events yet (`codeasst serve` records them from editor clients)")
        return
    typer.echo("| variant | day | shown | accept rate | discard rate | happiness per shown |")
    typer.echo("|---|---|---|---|---|---|")
    for d in days:
        typer.echo(f"| {d.variant} | {d.day} | {d.shown} | {d.accept_rate:.1%} | {d.discard_rate:.1%} | "
                   f"{d.happiness:.2f} |")
    comparison = store.compare()
    if comparison is not None:
        typer.echo("")
        typer.echo("\n".join(comparison.lines()))


def models(
    check: Annotated[bool, typer.Option("--check", help="Load the model and time a short generation.")] = False,
    prepare: Annotated[bool, typer.Option("--prepare", help="Build now, once per machine, what the first index "
                                          "would: the embedder's ONNX export and its int8 copy.")] = False,
    model: ModelOption = None,
    repo: RepoOption = Path("."),
    as_json: JsonOption = False,
) -> None:
    """List the language models codeasst can use; --check probes one."""
    from codeasst.console import model_lines, probe_lines
    from codeasst.models import available_models
    services = make_services(repo, model=model, about_repo=False)
    if prepare:
        import time

        if as_json or check:
            raise UsageError("--prepare takes neither --json nor --check")
        started = time.perf_counter()
        services.embedder.load()
        services.query_embedder.load()
        if services.first_embedder is not None:
            services.first_embedder.load()  # the static model's files checked against their sha256
        typer.echo(f"embedder ready: {services.embedder.name} (queries: {services.query_embedder.name}) "
                   f"in {time.perf_counter() - started:.1f} s")
        return
    if check:
        from codeasst.access import alone

        result = alone(services).probe()
        if as_json:
            emit_json(result)
        else:
            typer.echo("\n".join(probe_lines(result)))
        return
    specs = [spec.to_json() for spec in available_models(services.settings)]
    current = services.model_spec.name  # what "auto" or --model resolves to here
    if current not in {spec["name"] for spec in specs}:
        specs.append(services.model_spec.to_json())
    completing = services.complete_spec.name  # what complete.model resolves to here
    if completing not in {spec["name"] for spec in specs}:
        specs.append(services.complete_spec.to_json())
    if as_json:
        emit_json({"current": current, "completing": completing, "models": specs})
    else:
        typer.echo("\n".join(model_lines(specs, current, completing)))


def config(repo: RepoOption = Path("."), as_json: JsonOption = False) -> None:
    """Show the effective settings and where each value came from."""
    from codeasst.config import describe, load_settings
    from codeasst.paths import find_repo_root

    root, _ = find_repo_root(repo)
    loaded = load_settings(root)
    rows = describe(loaded)
    if as_json:
        emit_json({"files_read": [str(p) for p in loaded.files_read], "ignored": loaded.ignored,
                   "untrusted_file": str(loaded.untrusted_file) if loaded.untrusted_file else None,
                   "settings": rows})
        return
    read = ", ".join(str(p) for p in loaded.files_read) or "none"
    typer.echo(f"# config files read: {read}")
    if loaded.ignored:
        typer.echo(f"# {loaded.trust_note()}")
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        typer.echo(f"{row['key']:<{width}} = {json.dumps(row['value'])}    # {row['origin']}")


def show_paths(as_json: JsonOption = False) -> None:
    """Show where codeasst keeps its config, data and cache."""
    from codeasst import paths

    data = {
        "config_dir": str(paths.config_dir()),
        "config_file": str(paths.user_config_file()),
        "data_dir": str(paths.data_dir()),
        "cache_dir": str(paths.cache_dir()),
        "home_override": os.environ.get(paths.HOME_ENV),
    }
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        typer.echo(f"{key:<13} {value if value is not None else '-'}")
