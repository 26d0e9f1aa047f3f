"""The index's manifest opened by several processes at once (an editor's lsp, a serve, a CLI)."""

from __future__ import annotations

import threading

from codeasst.index.manifest import SCHEMA_VERSION, Manifest


def test_a_new_manifest_opened_by_many_at_once_is_migrated_once(tmp_path):
    """Each opener used to read version 0 and run every step itself: the second ALTER TABLE failed
    (`duplicate column name: fallback`) and that opener saw an unreadable index."""
    for attempt in range(5):
        path = tmp_path / f"manifest-{attempt}.sqlite"
        start, errors = threading.Barrier(8), []

        def open_it(path=path, start=start, errors=errors) -> None:
            start.wait()
            try:
                Manifest(path).close()
            except Exception as exc:  # noqa: BLE001 - the test reports every failure
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        manifest = Manifest(path)
        assert manifest._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        manifest.close()
