"""Importers: real export formats in, observations out; bad records rejected with a
reason, broken files rejected whole; re-importing dedupes; contacts name numbers."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memfuse_lite import MemFuse, Observation
from memfuse_lite.cli import main
from memfuse_lite.importers import IMPORTERS, ImportContext, Rejected, address_key, read

FIXTURES = Path(__file__).parent / "fixtures" / "import"
UTC8 = timezone(timedelta(hours=8))
CTX = ImportContext(user="ana", device="phone", tz=UTC8,
                    since=datetime(2025, 1, 1, tzinfo=UTC8),
                    until=datetime(2025, 3, 1, tzinfo=UTC8))


def split(items: list) -> tuple[list[Observation], list[Rejected]]:
    return ([i for i in items if isinstance(i, Observation)],
            [i for i in items if isinstance(i, Rejected)])


def test_every_format_is_registered() -> None:
    assert set(IMPORTERS) == {"ics", "mail", "vcf", "android-sms", "photos", "whatsapp"}


def test_calendar_expands_recurrences_with_moves_and_cancellations() -> None:
    obs, rejected = split(read("ics", FIXTURES / "calendar.ics", CTX))
    assert not rejected
    choir = sorted((o for o in obs if "Choir" in o.text), key=lambda o: o.meta["start_time"])
    assert len(choir) == 4  # weekly, COUNT=4, within the window
    moved = [o for o in choir if "moved from" in o.text]
    assert len(moved) == 1 and "Tue 14 Jan" in moved[0].text and "Mon 13 Jan" in moved[0].text
    cancelled = [o for o in choir if o.text.startswith("Cancelled:")]
    assert len(cancelled) == 1 and cancelled[0].meta["status"] == "cancelled"
    assert len({o.external_id for o in choir}) == 4
    dentist = next(o for o in obs if "Dentist" in o.text)
    assert dentist.meta["attendees"] == ["Dr. Lin"] and dentist.ts.tzinfo is not None
    # outside the window nothing is expanded
    narrow = ImportContext(user="ana", tz=UTC8, since=datetime(2025, 1, 16, tzinfo=UTC8),
                           until=datetime(2025, 1, 25, tzinfo=UTC8))
    assert len(split(read("ics", FIXTURES / "calendar.ics", narrow))[0]) == 1


def test_mail_reads_mbox_and_eml_and_rejects_what_it_cannot_date() -> None:
    obs, rejected = split(read("mail", FIXTURES / "mail.mbox", CTX))
    assert [r.where for r in rejected] == ["message 2"] and "Date" in rejected[0].reason
    moved, shop = obs
    assert moved.source == "email" and moved.meta["from"] == ["Lin Dental"]
    assert "Thursday at 16:00" in moved.text and moved.external_id == "<moved-1@lin-dental.example>"
    assert moved.ts.utcoffset() == timedelta(hours=1)
    assert "Parcel 4711 is on its way" in shop.text  # HTML reduced to text …
    assert "track()" not in shop.text and "color" not in shop.text  # … without code
    (eml,) = read("mail", FIXTURES / "message.eml", CTX)
    assert isinstance(eml, Observation) and "周日烤肉" in eml.text and "周日烤肉改到" in eml.text
    assert eml.meta["to"] == ["Ana", "Ben"]


def test_contacts_and_the_directory() -> None:
    obs, rejected = split(read("vcf", FIXTURES / "contacts.vcf", CTX))
    assert [o.meta["name"] for o in obs] == ["Dr. Lin's Dental Clinic", "Zhou Tao"]
    assert len(rejected) == 1 and "no name" in rejected[0].reason
    assert address_key("+1 (555) 010-4477") == address_key("5550104477") == "5550104477"
    assert address_key("Front@Lin-Dental.example") == "front@lin-dental.example"


def test_sms_and_calls_use_the_directory_before_the_backups_names() -> None:
    directory = {"5550104477": "Dr. Lin's Dental Clinic"}
    ctx = ImportContext(user="ana", tz=UTC8, directory=directory)
    obs, rejected = split(read("android-sms", FIXTURES / "sms.xml", ctx))
    assert len(obs) == 3 and len(rejected) == 2  # the undated sms and the <rcs> element
    first = obs[0]
    assert first.source == "sms" and first.meta["contactName"] == "Dr. Lin's Dental Clinic"
    assert first.text.startswith("SMS from Dr. Lin's Dental Clinic (+15550104477): Your")
    assert first.ts == datetime(2025, 1, 9, 15, 0, tzinfo=UTC8)
    assert obs[1].text.startswith("SMS to Dr. Lin's Dental Clinic")
    assert obs[2].text == "MMS from Zhou Tao: Photos from the barbecue are up"
    calls, bad = split(read("android-sms", FIXTURES / "calls.xml", ctx))
    assert calls[0].text == ("Outgoing call to Dr. Lin's Dental Clinic (5550104477), "
                             "1 min 35 s")
    assert calls[1].text.startswith("Missed call from Zhou Tao")
    assert len(bad) == 1 and "date" in bad[0].reason


@pytest.mark.parametrize("kind, name", [("android-sms", "broken.xml"), ("ics", "broken.ics"),
                                        ("mail", "notmail.mbox"),
                                        ("whatsapp", "notachat.txt"),
                                        ("vcf", "notachat.txt"), ("photos", "calls.xml"),
                                        ("ics", "missing.ics")])
def test_a_broken_file_is_one_rejection_and_nothing_else(kind: str, name: str) -> None:
    items = read(kind, FIXTURES / name, CTX)
    assert len(items) == 1 and isinstance(items[0], Rejected), items
    assert items[0].reason


@pytest.mark.parametrize("name", ["chat_android.txt", "chat_iphone.txt"])
def test_whatsapp_both_clocks_and_multi_line_messages(name: str) -> None:
    obs, rejected = split(read("whatsapp", FIXTURES / name, CTX))
    assert [o.meta["sender"] for o in obs] == ["Ben", "Ana", "Ben"]
    assert obs[1].text.endswith("the afternoon off") and "\n" in obs[1].text
    assert obs[0].ts.date() == datetime(2025, 1, 9).date()
    assert obs[2].ts.replace(tzinfo=None) == datetime(2025, 1, 13, 19, 40)
    if name == "chat_iphone.txt":
        assert obs[1].ts.hour == 20  # 8:12 PM
        assert len(rejected) == 1 and "date" in rejected[0].reason  # 1/32/25
    else:
        assert len(rejected) == 1 and "notice" in rejected[0].reason


def test_whatsapp_the_same_words_twice_in_a_minute_are_two_messages(tmp_path: Path) -> None:
    chat = tmp_path / "WhatsApp Chat with Ben.txt"
    chat.write_text("09/01/2025, 08:05 - Ben: ok\n09/01/2025, 08:05 - Ben: ok\n"
                    "09/01/2025, 08:05 - Ana: ok\n", encoding="utf-8")
    first, rejected = split(read("whatsapp", chat, CTX))
    assert not rejected and len({o.external_id for o in first}) == 3
    assert len({o.identity for o in first}) == 3
    again, _ = split(read("whatsapp", chat, CTX))
    assert [o.external_id for o in again] == [o.external_id for o in first]  # re-import


def test_photos_take_time_and_position_from_exif(tmp_path: Path) -> None:
    from PIL import Image

    folder = tmp_path / "DCIM"
    (folder / "trip").mkdir(parents=True)
    image = Image.new("RGB", (8, 8), "white")
    exif = Image.Exif()
    exif[0x0110] = "TestCam"  # Model
    exif.get_ifd(0x8769)[0x9003] = "2025:01:12 16:05:00"  # DateTimeOriginal
    exif.get_ifd(0x8769)[0x9011] = "+08:00"  # OffsetTimeOriginal
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2] = "N", (31.0, 13.0, 30.0)
    gps[3], gps[4] = "E", (121.0, 28.0, 12.0)
    image.save(folder / "trip" / "IMG_0001.jpg", exif=exif)
    image.save(folder / "no_exif.jpg")
    (folder / "notes.txt").write_text("not a photo")
    obs, rejected = split(read("photos", folder, CTX))
    (photo,) = obs
    assert photo.external_id.startswith("photo:") and photo.meta["file"] == "trip/IMG_0001.jpg"
    # another camera's IMG_0001 in another folder is another photo; a copy of this one is not
    other = tmp_path / "other"
    (other / "trip").mkdir(parents=True)
    exif[0x0110] = "OtherCam"
    image.save(other / "trip" / "IMG_0001.jpg", exif=exif)
    (again,) = split(read("photos", other, CTX))[0]
    assert again.external_id != photo.external_id
    (other / "trip" / "IMG_0001.jpg").write_bytes((folder / "trip" / "IMG_0001.jpg").read_bytes())
    (copy,) = split(read("photos", other, CTX))[0]
    assert copy.external_id == photo.external_id
    assert photo.ts == datetime(2025, 1, 12, 16, 5, tzinfo=UTC8)
    assert photo.meta["gps"] == {"lat": pytest.approx(31.225, abs=1e-4),
                                 "lon": pytest.approx(121.47, abs=1e-4)}
    assert len(rejected) == 1 and "capture time" in rejected[0].reason


def test_heic_photos(tmp_path: Path) -> None:
    """pillow-heif writes HEIC without the "Exif" prefix exifread insists on: read anyway."""
    from PIL import Image
    from pillow_heif import register_heif_opener

    register_heif_opener()
    exif = Image.Exif()
    exif.get_ifd(0x8769)[0x9003] = "2025:01:12 16:05:00"
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2] = "S", (33.0, 51.0, 54.0)
    gps[3], gps[4] = "E", (151.0, 12.0, 36.0)
    Image.new("RGB", (16, 16), "white").save(tmp_path / "IMG_0002.heic", exif=exif)
    (photo,) = read("photos", tmp_path, CTX)
    assert isinstance(photo, Observation), photo
    assert photo.ts == datetime(2025, 1, 12, 16, 5, tzinfo=UTC8)
    assert photo.meta["gps"]["lat"] == pytest.approx(-33.865, abs=1e-3)


def test_cli_import_names_numbers_dedupes_and_reports(tmp_path: Path, model_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    db = str(tmp_path / "mem")
    common = ["--db", db, "--user", "ana", "--tz", "Asia/Shanghai", "--model-dir",
              str(model_dir), "--json", "--quiet"]
    assert main(["import", "vcf", str(FIXTURES / "contacts.vcf"), *common]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["ingested"] == 2 and first["rejected"] == 1
    assert main(["import", "android-sms", str(FIXTURES / "sms.xml"),
                 str(FIXTURES / "calls.xml"), *common]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["ingested"] == 5 and second["rejected"] == 3
    assert main(["import", "android-sms", str(FIXTURES / "calls.xml"), *common]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ingested"] == 0 and again["duplicate"] == 2
    with _open(db, model_dir) as mem:
        stats = mem.stats()
        assert stats["observations"] == 7 and stats["events"] == 5  # contacts make no events
        call = mem.search("outgoing call", viewer="ana", pipeline="bm25").hits[0]
        event = mem.get_event(call.event_id)
        # the call log had only a number; the contact card named it
        assert "Dr. Lin's Dental Clinic" in event.actors
        sms = mem.search("appointment moved", viewer="ana", pipeline="bm25").hits[0]
        assert mem.fused_of(sms.event_id) == mem.fused_of(event.id)  # one memory


def _open(db: str, model_dir: Path) -> MemFuse:
    from memfuse_lite import MemFuseConfig

    return MemFuse(db, config=MemFuseConfig(model_dir=model_dir), create=False)
