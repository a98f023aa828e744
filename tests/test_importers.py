"""Importers: real export formats in, observations out; bad records rejected with a
reason, broken files rejected whole; re-importing dedupes; contacts name numbers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
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
    assert set(IMPORTERS) == {"ics", "mail", "vcf", "android-sms", "photos", "whatsapp",
                              "telegram", "csv", "imessage", "keep", "timeline"}


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


def test_mail_reads_mbox_and_eml_and_dates_a_message_without_a_date_header() -> None:
    obs, rejected = split(read("mail", FIXTURES / "mail.mbox", CTX))
    assert not rejected
    moved, undated, shop = obs
    # no Date header: the mbox From_ line says when it arrived
    assert undated.ts.replace(tzinfo=None) == datetime(2025, 1, 10, 19, 0)
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


@pytest.mark.parametrize("kind, name", [("ics", "broken.ics"),
                                        ("mail", "notmail.mbox"),
                                        ("whatsapp", "notachat.txt"),
                                        ("vcf", "notachat.txt"), ("photos", "calls.xml"),
                                        ("ics", "missing.ics")])
def test_a_broken_file_is_one_rejection_and_nothing_else(kind: str, name: str) -> None:
    items = read(kind, FIXTURES / name, CTX)
    assert len(items) == 1 and isinstance(items[0], Rejected), items
    assert items[0].reason


def test_a_backup_cut_off_keeps_the_records_before_the_cut() -> None:
    # read element by element: what came before the break is kept, the rest is one rejection
    first, rest = read("android-sms", FIXTURES / "broken.xml", CTX)
    assert isinstance(first, Observation) and first.text.endswith("first")
    assert isinstance(rest, Rejected) and "not well-formed" in rest.reason
    assert "the rest of it" in rest.reason


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
    assert main(["import", "vcf", str(FIXTURES / "contacts.vcf"), *common]) == 1  # some rejected
    first = json.loads(capsys.readouterr().out)
    assert first["ingested"] == 2 and first["rejected"] == 1
    assert main(["import", "android-sms", str(FIXTURES / "sms.xml"),
                 str(FIXTURES / "calls.xml"), *common]) == 1
    second = json.loads(capsys.readouterr().out)
    assert second["ingested"] == 5 and second["rejected"] == 3
    assert main(["import", "android-sms", str(FIXTURES / "calls.xml"), *common]) == 1
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


# -- format variants (fixtures written here, after the formats' documentation) ----------

def write(tmp_path: Path, name: str, text: str, newline: str = "\n") -> Path:
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def test_vcards_of_other_writers_are_read_card_by_card(tmp_path: Path) -> None:
    """An Outlook ORG with a comma, vCard 2.1 from Android with quoted-printable soft line
    breaks and a base64 PHOTO, and a card too broken to read beside good ones."""
    path = write(tmp_path, "mixed.vcf", (
        "BEGIN:VCARD\nVERSION:2.1\nN:Gump;Forrest\nFN:Forrest Gump\n"
        "ORG:Company, The;TheDepartment\nTEL;WORK;VOICE:(111) 555-1212\nEND:VCARD\n"
        "BEGIN:VCARD\nVERSION:2.1\n"
        "N;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:M=C3=BCller;J=\n=C3=BCrgen\n"
        "FN;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:J=C3=BCrgen M=\n=C3=BCller\n"
        "TEL;CELL:+49 151 2345678\n"
        "PHOTO;ENCODING=BASE64;JPEG:/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgH\n"
        " BwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0\n\nEND:VCARD\n"
        "BEGIN:VCARD\nVERSION:3.0\nEND:VCARD\n"), newline="\r\n")
    obs, rejected = split(read("vcf", path, CTX))
    assert [o.meta["name"] for o in obs] == ["Forrest Gump", "Jürgen Müller"]
    assert obs[0].meta["org"] == ["Company, The, TheDepartment"]
    assert obs[1].meta["phones"] == ["+49 151 2345678"] and "9j" not in obs[1].text
    assert [r.where for r in rejected] == ["card 3"] and "name" in rejected[0].reason


def test_an_event_without_a_start_is_rejected_alone(tmp_path: Path) -> None:
    path = write(tmp_path, "cal.ics", (
        "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//t//EN\n"
        "BEGIN:VEVENT\nUID:good-1\nDTSTAMP:20250101T000000Z\nDTSTART:20250110T100000Z\n"
        "DTEND:20250110T110000Z\nSUMMARY:Dentist\nEND:VEVENT\n"
        "BEGIN:VEVENT\nUID:bad-1\nDTSTAMP:20250101T000000Z\nSUMMARY:No start\nEND:VEVENT\n"
        "END:VCALENDAR\n"), newline="\r\n")
    obs, rejected = split(read("ics", path, CTX))
    assert [o.meta["title"] for o in obs] == ["Dentist"]
    assert len(rejected) == 1 and "bad-1" in rejected[0].where
    assert "DTSTART" in rejected[0].reason and rejected[0].reason != "'DTSTART'"


def test_all_day_events_are_days_in_the_calendars_own_zone(tmp_path: Path) -> None:
    path = write(tmp_path, "days.ics", (
        "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//t//EN\nX-WR-TIMEZONE:Europe/Berlin\n"
        "BEGIN:VEVENT\nUID:b-1\nDTSTAMP:20250101T000000Z\nDTSTART;VALUE=DATE:20250115\n"
        "DTEND;VALUE=DATE:20250116\nSUMMARY:Mia's birthday\nEND:VEVENT\n"
        "BEGIN:VEVENT\nUID:t-1\nDTSTAMP:20250101T000000Z\nDTSTART;VALUE=DATE:20250201\n"
        "DTEND;VALUE=DATE:20250204\nSUMMARY:Ski trip\nEND:VEVENT\nEND:VCALENDAR\n"),
        newline="\r\n")
    birthday, trip = sorted(split(read("ics", path, CTX))[0], key=lambda o: o.meta["start_time"])
    assert "Wed 15 Jan 2025, all day" in birthday.text and "00:00" not in birthday.text
    assert birthday.meta["start_time"] == "2025-01-15T00:00:00+01:00"  # Berlin, not --tz
    assert "Sat 01 Feb 2025 – Mon 03 Feb 2025, all day" in trip.text
    assert birthday.meta["all_day"] and "moved" not in birthday.text


@pytest.mark.parametrize(("lines", "when"), [
    ("2019/01/01, 11:25 - Ana: happy new year\n", datetime(2019, 1, 1, 11, 25)),
    ("[2019-04-16 02:09] Ana: landed\n", datetime(2019, 4, 16, 2, 9)),
    ("2019-10-20, 10:16 - Ana: dinner at 7?\n", datetime(2019, 10, 20, 10, 16)),
    ("13.6.2018 klo 21.25.15 - Ana: moi\n", datetime(2018, 6, 13, 21, 25, 15)),
    ("13. 6. 2018. 21:25 - Ana: bok\n", datetime(2018, 6, 13, 21, 25)),
])
def test_whatsapp_dates_of_phones_in_other_languages(tmp_path: Path, lines: str,
                                                     when: datetime) -> None:
    (msg,) = read("whatsapp", write(tmp_path, "WhatsApp Chat with Ana.txt", lines), CTX)
    assert isinstance(msg, Observation) and msg.ts == when.replace(tzinfo=UTC8)


def test_whatsapp_a_message_with_no_space_after_the_colon(tmp_path: Path) -> None:
    path = write(tmp_path, "WhatsApp Chat with Ana.txt", (
        "09/01/2025, 08:05 - Ana:.\n09/01/2025, 08:06 - Ana Silva:ok\n"
        "09/01/2025, 08:07 - Ana changed the group description:new trip\n"))
    obs, rejected = split(read("whatsapp", path, CTX))
    assert [o.text for o in obs] == ["Ana: .", "Ana Silva: ok"]
    assert len(rejected) == 1 and "notice" in rejected[0].reason


def test_whatsapp_notices_are_not_messages(tmp_path: Path) -> None:
    path = write(tmp_path, "WhatsApp Chat - Family.txt", (
        "[12/01/25, 14:05:33] Family: \u200eMessages and calls are end-to-end encrypted.\n"
        "[12/01/25, 14:05:40] Family: \u200eAna created group \"Family\"\n"
        "[12/01/25, 14:06:00] Ana: hello all\n"))
    obs, rejected = split(read("whatsapp", path, CTX))
    assert [o.text for o in obs] == ["Ana: hello all"]
    assert len(rejected) == 2 and all("notice" in r.reason for r in rejected)


def test_sms_backups_in_seconds_and_a_group_mms_by_its_sender(tmp_path: Path) -> None:
    path = write(tmp_path, "sms.xml", (
        "<?xml version='1.0' encoding='UTF-8'?>\n<smses count=\"2\">\n"
        "<sms address=\"+15550102000\" date=\"1736409600\" type=\"1\" body=\"in seconds\""
        " contact_name=\"Ben\" />\n"
        "<mms date=\"1736409700000\" msg_box=\"1\" address=\"+15550102000~+15550103000\""
        " contact_name=\"Ben, Cy\">\n<parts><part ct=\"text/plain\" text=\"pizza tonight?\" />"
        "</parts>\n<addrs><addr address=\"+15550103000\" type=\"137\" />"
        "<addr address=\"+15550102000\" type=\"151\" />"
        "<addr address=\"+15550109999\" type=\"151\" /></addrs>\n</mms>\n</smses>\n"))
    sms, mms = split(read("android-sms", path, CTX))[0]
    assert sms.ts.year == 2025  # not 1970
    assert mms.text == "MMS from +15550103000: pizza tonight?"  # not "Ben, Cy"
    assert mms.meta["phoneNumber"] == "+15550103000" and len(mms.meta["participants"]) == 3


def test_import_exit_status_and_a_summary_after_a_failing_file(
        tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "mem")
    common = ["--db", db, "--user", "ana", "--tz", "UTC", "--model-dir", str(model_dir),
              "--json", "--quiet"]
    good = write(tmp_path, "WhatsApp Chat with Ben.txt", "09/01/2025, 08:05 - Ben: hi\n")
    assert main(["import", "whatsapp", str(good), *common]) == 0
    capsys.readouterr()
    assert main(["import", "whatsapp", str(tmp_path / "missing.txt"), *common]) == 2
    assert "nothing could be read" in capsys.readouterr().err
    broken = write(tmp_path, "notes.txt", "not a chat at all\n")
    again = write(tmp_path, "WhatsApp Chat with Cy.txt", "09/01/2025, 09:00 - Cy: yo\n")
    assert main(["import", "whatsapp", str(broken), str(again), *common]) == 1
    summary = json.loads(capsys.readouterr().out)  # the file after the broken one counts
    assert summary["ingested"] == 1 and summary["rejected"] == 1


def test_an_importer_failing_on_an_odd_file_costs_that_file_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from memfuse_lite.importers import base

    def broken(path: Path, ctx: ImportContext) -> list:
        raise TypeError("sequence item 0: expected str instance, list found")

    monkeypatch.setitem(base.IMPORTERS, "vcf", replace(base.IMPORTERS["vcf"], read=broken))
    (rejected,) = read("vcf", FIXTURES / "contacts.vcf", CTX)
    assert isinstance(rejected, Rejected) and "TypeError" in rejected.reason


def test_telegram_exports_of_one_chat_and_of_a_whole_account(tmp_path: Path) -> None:
    """Written after Telegram Desktop's JSON export: formatted text as a list of strings
    and entities, service messages, media without text, with and without unix times."""
    chat = {"name": "Ben", "type": "personal_chat", "id": 4242, "messages": [
        {"id": 1, "type": "message", "date": "2025-01-09T08:05:00",
         "date_unixtime": "1736409900", "from": "Ben", "from_id": "user1",
         "text": "Did the clinic call you?"},
        {"id": 2, "type": "message", "date": "2025-01-09T08:12:00", "from": "Ana",
         "text": ["Yes, moved to ", {"type": "bold", "text": "Thursday 16:00"},
                  ", see ", {"type": "link", "text": "https://clinic.example"}],
         "reply_to_message_id": 1},
        {"id": 3, "type": "service", "date": "2025-01-09T08:13:00", "actor": "Ben",
         "action": "phone_call"},
        {"id": 4, "type": "message", "date": "2025-01-09T08:14:00", "from": "Ben",
         "photo": "photos/photo_1.jpg", "text": ""},
    ]}
    one = write(tmp_path, "result.json", json.dumps(chat))
    obs, rejected = split(read("telegram", one, CTX))
    assert [o.text for o in obs] == ["Ben: Did the clinic call you?",
                                     "Ana: Yes, moved to Thursday 16:00, see https://clinic.example"]
    assert obs[0].ts == datetime(2025, 1, 9, 8, 5, tzinfo=UTC)  # date_unixtime
    assert obs[1].ts == datetime(2025, 1, 9, 8, 12, tzinfo=UTC8)  # wall clock, --tz
    assert obs[1].external_id == "tg:4242:2" and obs[1].meta["reply_to"] == 1
    assert ["notice" in r.reason for r in rejected] == [True, False]
    account = write(tmp_path, "account.json", json.dumps(
        {"about": "export", "chats": {"about": "chats", "list": [
            chat, {"name": "Family", "type": "private_group", "id": 7, "messages": [
                {"id": 1, "type": "message", "date": "2025-01-10T19:00:00", "from": "Cy",
                 "text": "Dinner on Saturday?"}]}]}}))
    obs, _ = split(read("telegram", account, CTX))
    assert len(obs) == 3 and obs[-1].meta["chat"] == "Family"
    assert read("telegram", write(tmp_path, "other.json", "{}"), CTX)[0].reason.startswith(
        "no Telegram chats")  # type: ignore[union-attr]


def test_any_csv_by_a_column_mapping(tmp_path: Path, model_dir: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from memfuse_lite.importers.table import parse_mapping

    path = write(tmp_path, "log.csv", (
        "When;Who;Subject;Body;Kind\n"
        "2025-01-09 08:05;Ben;Clinic;dentist moved to Thursday;sms\n"
        "2025-01-09 08:06;Ben;;ok;sms\n"
        "2025-01-09 08:06;Ben;;ok;sms\n"
        "yesterday;Ben;;late;sms\n"
        "1736409900;Ana;Note;pick up Mia;note\n"))
    ctx = replace_ctx(options=parse_mapping("ts=When,text=Subject+Body,source=Kind"))
    obs, rejected = split(read("csv", path, ctx))
    assert [o.text for o in obs] == ["Clinic — dentist moved to Thursday", "ok", "ok",
                                     "Note — pick up Mia"]
    assert obs[0].source == "sms" and obs[0].meta == {"Who": "Ben"}
    assert obs[0].ts == datetime(2025, 1, 9, 8, 5, tzinfo=UTC8)
    assert obs[1].external_id != obs[2].external_id  # two "ok" in one minute
    assert obs[3].ts == datetime(2025, 1, 9, 8, 5, tzinfo=UTC)  # epoch seconds
    assert [r.where for r in rejected] == ["line 5"] and "ts_format" in rejected[0].reason
    again, _ = split(read("csv", path, ctx))
    assert [o.external_id for o in again] == [o.external_id for o in obs]  # re-import
    # no mapping: the columns are found by their names ("When"; "Subject", "Body")
    guessed, _ = split(read("csv", path, CTX))
    assert [o.text for o in guessed] == [o.text for o in obs]
    odd = write(tmp_path, "odd.csv", "At,Words\n2025-01-09 08:05,hello\n")
    assert "give --map with ts and text" in read("csv", odd, CTX)[0].reason  # type: ignore[union-attr]
    with pytest.raises(Exception, match="unknown key"):
        parse_mapping("when=When")
    db = str(tmp_path / "mem")
    assert main(["import", "csv", str(path), "--db", db, "--user", "ana", "--map",
                 "ts=When,text=Body,source=:sms", "--tz", "UTC", "--model-dir", str(model_dir),
                 "--json", "--quiet"]) == 1
    assert json.loads(capsys.readouterr().out)["ingested"] == 4


def replace_ctx(**changes: object) -> ImportContext:
    from dataclasses import replace

    return replace(CTX, **changes)  # type: ignore[arg-type]


def test_a_messages_database_read_only(tmp_path: Path) -> None:
    """A chat.db with the tables Messages keeps: text in ``text``, text only in an archived
    attributedBody, a picture without text, dates in nanoseconds and in seconds."""
    import apsw

    path = tmp_path / "chat.db"
    db = apsw.Connection(str(path))
    db.execute("""
        CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT);
        CREATE TABLE chat (ROWID INTEGER PRIMARY KEY, chat_identifier TEXT, display_name TEXT);
        CREATE TABLE message (ROWID INTEGER PRIMARY KEY, guid TEXT, text TEXT,
            attributedBody BLOB, date INTEGER, is_from_me INTEGER, service TEXT,
            handle_id INTEGER);
        CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER);
        INSERT INTO handle VALUES (1, '+15550102000');
        INSERT INTO chat VALUES (1, '+15550102000', '');""")
    words = b"dentist moved to Thursday"
    body = b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\x84\x84\x84\x12NSAttributedString" \
        b"\x00\x84\x84\x08NSObject\x00\x85\x92\x84\x84\x84\x08NSString\x01\x94\x84\x01+" \
        + bytes([len(words)]) + words + b"\x86\x84\x02iI\x01"
    nanos = int((datetime(2025, 1, 9, 8, 5, tzinfo=UTC) - datetime(2001, 1, 1, tzinfo=UTC))
                .total_seconds() * 1e9)
    db.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?, ?, ?, 1)", [
        (1, "g-1", "Did the clinic call?", None, nanos, 0, "iMessage"),
        (2, "g-2", None, body, nanos + 60 * 10**9, 1, "iMessage"),
        (3, "g-3", "\ufffc", None, nanos + 120 * 10**9, 0, "iMessage"),
        (4, "g-4", "old phone", None, 500_000_000, 0, "SMS")])
    db.executemany("INSERT INTO chat_message_join VALUES (1, ?)", [(1,), (2,), (3,), (4,)])
    db.close()
    before = path.read_bytes()
    ctx = replace_ctx(directory={"5550102000": "Ben"})
    obs, rejected = split(read("imessage", path, ctx))
    assert [o.text for o in obs] == [
        "SMS from Ben (+15550102000): old phone",
        "iMessage from Ben (+15550102000): Did the clinic call?",
        "iMessage to Ben (+15550102000): dentist moved to Thursday"]
    assert obs[1].ts == datetime(2025, 1, 9, 8, 5, tzinfo=UTC) and obs[0].source == "sms"
    assert obs[0].ts.year == 2016  # seconds since 2001
    assert [r.where for r in rejected] == ["message 3"]
    assert path.read_bytes() == before  # never written
    assert "not a Messages database" in read("imessage", FIXTURES / "calls.xml", CTX)[0].reason  # type: ignore[union-attr]


def test_google_keep_notes_from_takeout(tmp_path: Path) -> None:
    """Written after Takeout's Keep folder: a note, a checklist, one in the trash, an
    archived one, and the .html copies beside them."""
    folder = tmp_path / "Takeout" / "Keep"
    folder.mkdir(parents=True)
    edited = int(datetime(2025, 1, 9, 8, 5, tzinfo=UTC).timestamp() * 1e6)
    notes = {
        "Dentist.json": {"title": "Dentist", "textContent": "Dr. Lin moved it to\nThursday 4pm",
                         "userEditedTimestampUsec": edited, "createdTimestampUsec": edited - 9,
                         "isTrashed": False, "labels": [{"name": "Family"}]},
        "Groceries.json": {"title": "Groceries", "listContent": [
            {"text": "milk", "isChecked": False}, {"text": "eggs", "isChecked": True}],
            "userEditedTimestampUsec": edited + 60_000_000, "isArchived": True},
        "Old.json": {"title": "Old", "textContent": "gone", "isTrashed": True,
                     "userEditedTimestampUsec": edited},
    }
    for name, note in notes.items():
        (folder / name).write_text(json.dumps(note), encoding="utf-8")
        (folder / name.replace(".json", ".html")).write_text("<html></html>")
    obs, rejected = split(read("keep", tmp_path / "Takeout", CTX))
    assert [o.text for o in obs] == ["Note: Dentist: Dr. Lin moved it to Thursday 4pm",
                                     "Note: Groceries: ☐ milk, ☑ eggs"]
    assert obs[0].ts == datetime(2025, 1, 9, 8, 5, tzinfo=UTC) and obs[0].source == "note"
    assert obs[0].meta["labels"] == ["Family"] and obs[1].meta["archived"]
    assert [Path(r.path).name for r in rejected] == ["Old.json"] and "trash" in rejected[0].reason
    again, _ = split(read("keep", tmp_path / "Takeout", CTX))
    assert [o.external_id for o in again] == [o.external_id for o in obs]


def test_timeline_visits_of_both_layouts(tmp_path: Path) -> None:
    """Written after Takeout's Semantic Location History and the on-device export."""
    history = tmp_path / "Semantic Location History" / "2025"
    history.mkdir(parents=True)
    (history / "2025_JANUARY.json").write_text(json.dumps({"timelineObjects": [
        {"placeVisit": {"location": {"latitudeE7": 312254000, "longitudeE7": 1214700000,
                                     "placeId": "ChIJlin", "name": "Lin Dental Clinic",
                                     "address": "1 Huaihai Rd, Shanghai"},
                        "duration": {"startTimestamp": "2025-01-09T08:00:00Z",
                                     "endTimestamp": "2025-01-09T09:00:00.000Z"}}},
        {"activitySegment": {"duration": {"startTimestampMs": "1736413200000"}}},
        {"placeVisit": {"location": {"placeId": "ChIJold", "name": "Old Cafe"},
                        "duration": {"startTimestampMs": "1736499600000",
                                     "endTimestampMs": "1736503200000"}}}]}))
    obs, rejected = split(read("timeline", tmp_path / "Semantic Location History", CTX))
    clinic, cafe = obs
    assert clinic.source == "location" and clinic.ts == datetime(2025, 1, 9, 8, tzinfo=UTC)
    assert clinic.text.startswith("Visited Lin Dental Clinic (1 Huaihai Rd, Shanghai)")
    assert clinic.meta["place"] == "Lin Dental Clinic, 1 Huaihai Rd, Shanghai"
    assert clinic.meta["gps"] == {"lat": 31.2254, "lon": 121.47}
    assert cafe.ts == datetime(2025, 1, 10, 9, tzinfo=UTC)  # …TimestampMs
    assert [r.reason for r in rejected] == ["a journey, not a visit"]
    device = write(tmp_path, "Timeline.json", json.dumps({"semanticSegments": [
        {"startTime": "2025-01-11T19:00:00.000+08:00", "endTime": "2025-01-11T22:00:00.000+08:00",
         "visit": {"topCandidate": {"placeId": "ChIJhome", "semanticType": "HOME",
                                    "placeLocation": {"latLng": "31.2001°, 121.4002°"}}}},
        {"timelinePath": [{"point": "31.2°, 121.4°", "time": "2025-01-11T18:00:00+08:00"}]}]}))
    (home,), _ = split(read("timeline", device, CTX))
    assert home.ts == datetime(2025, 1, 11, 19, tzinfo=UTC8) and "Home" in home.text
    assert home.meta["gps"] == {"lat": 31.2001, "lon": 121.4002}
    iphone = write(tmp_path, "location-history.json", json.dumps([
        {"startTime": "2025-01-12T10:00:00.000+08:00", "endTime": "2025-01-12T11:00:00.000+08:00",
         "visit": {"topCandidate": {"semanticType": "Inferred Work",
                                    "placeLocation": "geo:31.230000,121.470000"}}}]))
    (work,), _ = split(read("timeline", iphone, CTX))
    assert work.text.startswith("Visited Work,") and work.meta["gps"]["lat"] == 31.23


def test_bench_import_surveys_a_folder_of_exports(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.import_corpus import survey

    rows = {r["file"]: r for r in survey(FIXTURES, CTX)}
    assert rows["mail.mbox"]["kind"] == "mail" and rows["mail.mbox"]["read"] == 3
    assert rows["broken.ics"]["read"] == 0 and rows["broken.ics"]["rejected"] == 1
    assert rows["sms.xml"]["kind"] == "android-sms" and rows["sms.xml"]["reasons"]


def test_records_stream_one_at_a_time_and_a_failure_part_way_keeps_those_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from memfuse_lite.importers import base, stream

    handed: list[int] = []

    def failing(path: Path, ctx: ImportContext):  # type: ignore[no-untyped-def]
        for n, item in enumerate(base.IMPORTERS["whatsapp"].read(path, ctx)):
            if n == 2:
                raise OSError("the disk went away")
            handed.append(n)
            yield item

    monkeypatch.setitem(base.IMPORTERS, "flaky", replace(base.IMPORTERS["whatsapp"],
                                                          kind="flaky", read=failing))
    records = stream("flaky", FIXTURES / "chat_android.txt", CTX)
    assert handed == [], "nothing is read before it is asked for"
    first = next(records)  # the encryption notice
    assert isinstance(first, Rejected) and handed == [0]
    second, rest = list(records)
    assert isinstance(second, Observation) and second.text.startswith("Ben: Did the clinic")
    assert isinstance(rest, Rejected) and "the rest of it" in rest.reason
    assert "disk went away" in rest.reason


def test_an_import_larger_than_a_batch_goes_in_whole(
        tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memfuse_lite.cli import IMPORT_BATCH

    n = IMPORT_BATCH * 2 + 17
    chat = write(tmp_path, "WhatsApp Chat with Ben.txt", "".join(
        f"09/01/2025, {8 + i // 60:02d}:{i % 60:02d} - Ben: message number {i}\n"
        for i in range(n)))
    assert main(["import", "whatsapp", str(chat), "--db", str(tmp_path / "m"), "--user", "ana",
                 "--tz", "UTC", "--model-dir", str(model_dir), "--json", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ingested"] == n and summary["rejected"] == 0
