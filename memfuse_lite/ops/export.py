"""Writing the observation log back out in the ingest format."""

from __future__ import annotations

import json
from typing import IO

from ..store.sqlite import Store


def export_log(store: Store, out: IO[str]) -> int:
    """Every observation as one JSONL line, ordered by time, user, source and id."""
    n = 0
    last: tuple[float, str, str, str] | None = None
    while True:
        with store.reading() as db:
            if last is None:
                rows = db.execute(
                    "SELECT ts_epoch, user, source, external_id, device, ts, text, meta,"
                    " visibility FROM observations ORDER BY ts_epoch, user, source, external_id"
                    " LIMIT 2000").fetchall()
            else:
                rows = db.execute(
                    "SELECT ts_epoch, user, source, external_id, device, ts, text, meta,"
                    " visibility FROM observations WHERE (ts_epoch, user, source, external_id)"
                    " > (?, ?, ?, ?) ORDER BY ts_epoch, user, source, external_id LIMIT 2000",
                    last).fetchall()
        if not rows:
            return n
        for _, user, source, ext, device, ts, text, meta, vis in rows:
            out.write(json.dumps({"source": source, "external_id": ext, "user": user,
                                  "device": device, "ts": ts, "text": text,
                                  "meta": json.loads(str(meta)),
                                  "visibility": json.loads(str(vis))},
                                 ensure_ascii=False) + "\n")
            n += 1
        last = tuple(rows[-1][:4])  # type: ignore[assignment]
