"""A folder of photos (JPEG, HEIC, TIFF, PNG with EXIF): the capture time and GPS
position from EXIF (``exifread``; Pillow with ``pillow-heif`` for the HEIC files exifread
cannot read); the record's id is the file's content hash (names repeat across folders
and phones); no pixels are stored. A photo without a
capture time is rejected (a file date is not when it was taken).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .base import ImportContext, Importer, ImportFailed, Item, Rejected

SUFFIXES = (".jpg", ".jpeg", ".heic", ".heif", ".tif", ".tiff", ".png")


def _ratio(value: Any) -> float:
    return float(value.num) / float(value.den) if getattr(value, "den", 0) else float(value)


def _degrees(tag: Any, ref: Any) -> float | None:
    if tag is None:
        return None
    try:
        d, m, s = (_ratio(v) for v in getattr(tag, "values", tag)[:3])
    except (ValueError, TypeError, ZeroDivisionError):
        return None
    value = d + m / 60.0 + s / 3600.0
    return -value if str(ref).strip().upper() in ("S", "W") else value


def _exif_tags(file: Path) -> dict[str, Any]:
    """EXIF tags named as exifread names them ("EXIF DateTimeOriginal", "GPS GPSLatitude")."""
    import exifread

    try:
        with open(file, "rb") as f:
            return dict(exifread.process_file(f, details=False))
    except Exception:  # exifread raises many kinds (an assertion on some HEIC layouts)
        if file.suffix.lower() not in (".heic", ".heif"):
            raise
    return _pillow_tags(file)


def _pillow_tags(file: Path) -> dict[str, Any]:
    """The same tags read by Pillow (HEIC through pillow-heif)."""
    from PIL import Image
    from pillow_heif import register_heif_opener

    register_heif_opener()
    with Image.open(file) as image:
        exif = image.getexif()
    sub, gps = exif.get_ifd(0x8769), exif.get_ifd(0x8825)
    names = {"EXIF DateTimeOriginal": sub.get(0x9003), "EXIF DateTimeDigitized": sub.get(0x9004),
             "Image DateTime": exif.get(0x0132), "EXIF OffsetTimeOriginal": sub.get(0x9011),
             "EXIF OffsetTime": sub.get(0x9010), "Image Make": exif.get(0x010F),
             "Image Model": exif.get(0x0110), "GPS GPSLatitudeRef": gps.get(1),
             "GPS GPSLatitude": gps.get(2), "GPS GPSLongitudeRef": gps.get(3),
             "GPS GPSLongitude": gps.get(4)}
    return {k: v for k, v in names.items() if v is not None}


def _taken(tags: dict[str, Any], ctx: ImportContext) -> datetime | None:
    for key in ("EXIF DateTimeOriginal", "EXIF DateTimeDigitized", "Image DateTime"):
        raw = str(tags.get(key) or "").strip()
        if not raw:
            continue
        try:
            dt = datetime.strptime(raw[:19], "%Y:%m:%d %H:%M:%S")
        except ValueError:
            continue
        offset = str(tags.get("EXIF OffsetTimeOriginal") or tags.get("EXIF OffsetTime") or "")
        if len(offset) == 6 and offset[0] in "+-":
            sign = -1 if offset[0] == "-" else 1
            delta = timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))
            return dt.replace(tzinfo=timezone(sign * delta))
        return ctx.local(dt)
    return None


def _content_id(file: Path) -> str:
    """The sha256 of a file's bytes (read in blocks), shortened."""
    digest = hashlib.sha256()
    with file.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:32]


def read_photos(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every photo in a folder (recursively), or one photo file."""
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        raise ImportFailed("no photos found (JPEG, HEIC, TIFF or PNG)")
    root = path if path.is_dir() else path.parent
    for file in files:
        name = file.relative_to(root).as_posix()
        try:
            tags = _exif_tags(file)
        except ImportError:
            raise
        except Exception as exc:  # the readers raise many kinds on damaged files
            yield Rejected(str(file), "", f"unreadable EXIF: {exc!r}")
            continue
        taken = _taken(tags, ctx)
        if taken is None:
            yield Rejected(str(file), "", "no capture time in EXIF")
            continue
        lat = _degrees(tags.get("GPS GPSLatitude"), tags.get("GPS GPSLatitudeRef"))
        lon = _degrees(tags.get("GPS GPSLongitude"), tags.get("GPS GPSLongitudeRef"))
        if lat == 0 and lon == 0:  # written by cameras without a fix: no position
            lat = lon = None
        camera = " ".join(str(tags.get(k) or "") for k in ("Image Make", "Image Model")).strip()
        text = f"Photo {file.name} taken {taken:%a %d %b %Y %H:%M}"
        if lat is not None and lon is not None:
            text += f" at {lat:.5f}, {lon:.5f}"
        meta: dict[str, Any] = {"file": name, "camera": camera}
        if lat is not None and lon is not None:
            meta["gps"] = {"lat": round(lat, 6), "lon": round(lon, 6)}
        # by content, not by name: cameras restart IMG_0001 in every folder and on every
        # phone, and the same picture copied to two folders is one photo
        yield ctx.observation(file, "", source="photo", ts=taken, text=text,
                              external_id=f"photo:{_content_id(file)}", meta=meta)


IMPORTER = Importer("photos", read_photos, "a folder of photos: EXIF time and GPS, no pixels")
