"""Sync through a replicated folder: three devices, each with its own copy of the folder,
and a replicator between the copies that delays, duplicates under conflict names,
reorders and truncates files, as real sync services do."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfuse_lite import InvalidQuery, MemFuse, MemFuseConfig, Observation, SyncKey
from memfuse_lite.demo import QUESTIONS, observations
from memfuse_lite.sync import ROOT

from .conftest import FakeEmbedder

DEVICES = {"ana-phone": "ana", "ben-laptop": "ben", "mia-phone": "mia"}
PRIVATE_WORD = "bracelet"


def replicate(copies: dict[str, Path], rng: random.Random | None) -> None:
    """Copy every segment file between the folder copies. With ``rng``, like a service
    on a bad day: some files wait for a later round, some arrive cut short first, some
    arrive twice (the second time under a conflict name), in any order."""
    # a device's files travel from the copy of the device that wrote them
    files = [(src, path) for src, root in copies.items()
             for path in (root / ROOT / src).glob("*") if path.is_file()
             and not path.name.startswith(".")]
    if rng is not None:
        rng.shuffle(files)
    for src, path in files:
        relative = path.relative_to(copies[src])
        for dst, root in copies.items():
            target = root / relative
            if dst == src or (target.exists() and target.read_bytes() == path.read_bytes()):
                continue
            if rng is not None and rng.random() < 0.3:
                continue  # later
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if rng is not None and rng.random() < 0.25:
                target.write_bytes(data[: rng.randrange(1, len(data))])  # cut short
                continue
            target.write_bytes(data)
            if rng is not None and rng.random() < 0.25:
                shutil.copy(target, target.with_name(
                    f"{target.stem}.sync-conflict-20250301-{rng.randrange(10**6)}.jsonl"))


def household_export(mem: MemFuse) -> list[str]:
    out = io.StringIO()
    mem.export(out)
    return sorted(line for line in out.getvalue().splitlines() if '"household"' in line)


@pytest.fixture
def household(tmp_path: Path, config: MemFuseConfig) -> Iterator[dict[str, MemFuse]]:
    """Each person's device holding what that person recorded of the demo week."""
    yield from _devices(tmp_path, config, {d: [o for o in observations() if o.user == u]
                                           for d, u in DEVICES.items()})


def _devices(tmp_path: Path, config: MemFuseConfig, holding: dict[str, list[Observation]]
             ) -> Iterator[dict[str, MemFuse]]:
    """A memory per device, each holding its records; closed afterwards."""
    mems = {}
    for device, records in holding.items():
        mem = MemFuse(tmp_path / device, config=config, embedder=FakeEmbedder())

        async def fill(m: MemFuse = mem, r: list[Observation] = records) -> None:
            await m.ingest_many(r)
            await m.flush()
        asyncio.run(fill())
        mems[device] = mem
    yield mems
    for mem in mems.values():
        mem.close()


def sync_all(mems: dict[str, MemFuse], copies: dict[str, Path], rng: random.Random | None,
             rounds: int) -> list[str]:
    """Rounds of every device syncing (in a shuffled order) and the replicator running;
    the reasons files were skipped."""
    skipped = []
    for _ in range(rounds):
        order = list(mems)
        if rng is not None:
            rng.shuffle(order)
        for device in order:
            report = asyncio.run(mems[device].sync(copies[device], device=device))
            skipped += [why for _, why in report.skipped]
        replicate(copies, rng)
    return skipped


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_three_devices_agree_through_a_bad_replicator(household: dict[str, MemFuse],
                                                      tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    copies = {d: tmp_path / f"folder-{d}" for d in DEVICES}
    for root in copies.values():
        (root / ROOT / "ana-phone").mkdir(parents=True)
        (root / ROOT / "ana-phone" / "notes.txt").write_text("not a segment")
    skipped = sync_all(household, copies, rng, rounds=6)
    sync_all(household, copies, None, rounds=3)  # then the service catches up
    assert "not a segment (no header)" in skipped
    exports = {d: household_export(m) for d, m in household.items()}
    assert exports["ana-phone"] == exports["ben-laptop"] == exports["mia-phone"]
    assert len(exports["ana-phone"]) == 12, "every household record of the week, once each"
    # Ben's private note stayed on Ben's laptop
    for device, mem in household.items():
        out = io.StringIO()
        mem.export(out)
        assert (PRIVATE_WORD in out.getvalue()) == (device == "ben-laptop"), device
    # the same memory on every device, in canonical form
    for mem in household.values():
        mem.canonicalise()
    answers = {d: [[h.text for h in m.search(q, viewer=v, pipeline="fused").hits]
                   for v, q in QUESTIONS if v == "ana"] for d, m in household.items()}
    assert answers["ana-phone"] == answers["ben-laptop"] == answers["mia-phone"]


def test_a_forget_reaches_every_device_and_stays(household: dict[str, MemFuse],
                                                 tmp_path: Path) -> None:
    copies = {d: tmp_path / f"folder-{d}" for d in DEVICES}
    sync_all(household, copies, None, rounds=2)
    old = "Dentist – Dr. Lin, Wed 15:00"
    assert all(old in "".join(household_export(m)) for m in household.values())
    # an old segment holding the record, to arrive late under another name
    segment = next(p for p in (copies["ana-phone"] / ROOT / "ana-phone").iterdir()
                   if old in p.read_text())
    ana = household["ana-phone"]
    gone = ana.forget_own(viewer="ana", observation=[
        h.provenance[0].observation_id
        for h in ana.search("dentist Wed", viewer="ana", pipeline="bm25").hits
        if h.text == old])
    assert gone.observations == 1
    sync_all(household, copies, random.Random(7), rounds=4)
    sync_all(household, copies, None, rounds=2)
    late = copies["mia-phone"] / ROOT / "ana-phone" / f"{segment.stem}.sync-conflict-1.jsonl"
    late.write_bytes(segment.read_bytes())
    sync_all(household, copies, None, rounds=2)
    for device, mem in household.items():
        assert old not in "".join(household_export(mem)), device
        assert "Call from Dr. Lin's clinic, 2 min" in "".join(household_export(mem))


def test_a_device_is_named_once(household: dict[str, MemFuse], tmp_path: Path) -> None:
    ana = household["ana-phone"]
    with pytest.raises(InvalidQuery, match="name this device"):
        asyncio.run(ana.sync(tmp_path / "f"))
    with pytest.raises(InvalidQuery, match="letters, digits"):
        asyncio.run(ana.sync(tmp_path / "f", device="../ben"))
    asyncio.run(ana.sync(tmp_path / "f", device="ana-phone"))
    assert asyncio.run(ana.sync(tmp_path / "f")).device == "ana-phone"
    with pytest.raises(InvalidQuery, match="syncs as device 'ana-phone'"):
        asyncio.run(ana.sync(tmp_path / "f", device="other"))
    # nothing new: no segment is written
    assert asyncio.run(ana.sync(tmp_path / "f")).segments_written == []


def test_the_cli_syncs_two_memories_in_separate_processes(tmp_path: Path, model_dir: Path,
                                                          e5_dir: Path) -> None:
    common = ["--model-dir", str(model_dir), "--tz", "UTC"]
    folder = tmp_path / "shared"  # one folder both see, as on one machine's disk
    _ingest_each_persons_device(tmp_path, common)
    for device in ("ana-phone", "ben-laptop", "ana-phone"):
        done = _cli("sync", "--db", str(tmp_path / device), "--folder", str(folder),
                    "--device", device, "--json", *common)
        assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["received"] == 4 and report["skipped"] == []  # Ben's household records
    found = _cli("search", "--db", str(tmp_path / "ana-phone"), "--viewer", "ana", "--json",
                 "--pipeline", "bm25", *common, "flight Beijing delayed")
    assert any("MU5101" in h["text"] for h in json.loads(found.stdout)["hits"])


def _ingest_each_persons_device(tmp_path: Path, common: list[str]) -> None:
    """Ana's phone and Ben's laptop, each holding what that person recorded, by the CLI."""
    for device, user in (("ana-phone", "ana"), ("ben-laptop", "ben")):
        data = tmp_path / f"{user}.jsonl"
        data.write_text("".join(json.dumps(o.to_json(), ensure_ascii=False) + "\n"
                                for o in observations() if o.user == user))
        assert _cli("ingest", "--db", str(tmp_path / device), "--quiet", *common,
                    str(data)).returncode == 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memfuse_lite.cli", *args],
                          capture_output=True, text=True, timeout=300)


def test_only_a_memory_that_syncs_keeps_what_it_forgot(household: dict[str, MemFuse],
                                                       tmp_path: Path) -> None:
    def tombstones(mem: MemFuse) -> int:
        with mem.engine.store.reading() as db:
            return int(db.execute("SELECT count(*) FROM sync_forgotten").fetchone()[0])

    mia, ana = household["mia-phone"], household["ana-phone"]
    with pytest.raises(InvalidQuery, match="give observation ids"):
        mia.forget_own(viewer="mia")
    assert mia.forget_own(viewer="mia", source="chat").observations == 1
    assert tombstones(mia) == 0, "a memory that never synced keeps nothing of it"
    asyncio.run(ana.sync(tmp_path / "f", device="ana-phone"))
    assert ana.forget_own(viewer="ana", source="push").observations == 1
    assert tombstones(ana) == 1


def test_the_inspector_syncs_while_it_serves(tmp_path: Path, model_dir: Path,
                                             e5_dir: Path) -> None:
    from .test_ui import Inspector

    common = ["--model-dir", str(model_dir), "--tz", "UTC"]
    folder = tmp_path / "shared"
    _ingest_each_persons_device(tmp_path, common)
    ui = Inspector(tmp_path / "ana-phone", "ana", model_dir, "--sync", str(folder),
                   "--device", "ana-phone", "--sync-every", "0.5")
    try:
        done = _cli("sync", "--db", str(tmp_path / "ben-laptop"), "--folder", str(folder),
                    "--device", "ben-laptop", *common)
        assert done.returncode == 0, done.stderr
        for _ in range(120):  # the inspector's next turns apply Ben's segment
            hits = ui.get("/api/search?q=flight+Beijing+delayed&pipeline=bm25")[1]["hits"]
            if any("MU5101" in h["text"] for h in hits):
                break
            time.sleep(0.5)
        else:
            raise AssertionError("Ben's records never reached the inspector's memory")
        assert list((folder / ROOT / "ana-phone").glob("*.jsonl")), "Ana's records were sent"
    finally:
        ui.close()



# -- keys: sealed segments, and records only some users may see ---------------------------

KEYED = {"ana-phone": "ana", "ana-laptop": "ana", "ben-laptop": "ben", "mia-phone": "mia"}


def _own_records(user: str) -> list[Observation]:
    """What ``user`` recorded of the demo week, and for Ana two records few may see."""
    out = [o for o in observations() if o.user == user]
    if user == "ana":
        out += [Observation(source="notes", user="ana", ts="2025-03-06T21:00:00+08:00",
                            text="Surprise party for Ben: book the karaoke room",
                            external_id="ana-private", visibility="private"),
                Observation(source="notes", user="ana", ts="2025-03-06T21:05:00+08:00",
                            text="Mia and I buy the cake at Holiland", external_id="ana-mia",
                            visibility=("mia",))]
    return out


@pytest.fixture
def keyed(tmp_path: Path, config: MemFuseConfig) -> Iterator[dict[str, MemFuse]]:
    # Ana's laptop is new: it starts empty
    yield from _devices(tmp_path, config, {d: [] if d == "ana-laptop" else _own_records(u)
                                           for d, u in KEYED.items()})


def _texts(mem: MemFuse) -> str:
    out = io.StringIO()
    mem.export(out)
    return out.getvalue()


def test_sealed_segments_and_records_only_their_people_receive(
        keyed: dict[str, MemFuse], tmp_path: Path) -> None:
    household, ana, ben = SyncKey.new(), SyncKey.new("ana"), SyncKey.new("ben")
    held = {"ana-phone": [household, ana], "ana-laptop": [household, ana],
            "ben-laptop": [household, ben], "mia-phone": [household]}
    folder = tmp_path / "shared"  # one folder all see
    for _ in range(2):
        for device, mem in keyed.items():
            report = asyncio.run(mem.sync(folder, device=device, keys=held[device]))
            assert report.skipped == [], report.skipped
    # the folder holds no record's words, only sealed bytes
    stored = b"".join(p.read_bytes() for p in (folder / ROOT).rglob("*.jsonl"))
    for word in (b"Dentist", b"karaoke", b"Holiland", PRIVATE_WORD.encode()):
        assert word not in stored
    texts = {d: _texts(m) for d, m in keyed.items()}
    assert all("Dr. Lin" in t for t in texts.values()), "household records reach all"
    # Ana's private note and the one she shares with Mia reach Ana's other device only: her
    # phone holds no key of Mia's, so it cannot seal it for Mia's devices
    for device, text in texts.items():
        assert ("karaoke" in text) == device.startswith("ana-"), device
        assert ("Holiland" in text) == device.startswith("ana-"), device
        assert (PRIVATE_WORD in text) == (device == "ben-laptop"), device
    # Mia's phone saw sealed segments that are not for it and said so, without complaint
    assert asyncio.run(keyed["mia-phone"].sync(folder, keys=held["mia-phone"])) \
        .not_for_this_device >= 1
    # the new laptop answers Ana's question about her private plan
    hits = keyed["ana-laptop"].search("karaoke party", viewer="ana", pipeline="bm25").hits
    assert hits and "karaoke" in hits[0].text


def test_a_person_s_records_wait_for_their_key(keyed: dict[str, MemFuse],
                                               tmp_path: Path) -> None:
    folder, household, ana = tmp_path / "shared", SyncKey.new(), SyncKey.new("ana")
    phone, laptop = keyed["ana-phone"], keyed["ana-laptop"]
    asyncio.run(phone.sync(folder, device="ana-phone", keys=[household]))
    asyncio.run(laptop.sync(folder, device="ana-laptop", keys=[household, ana]))
    assert "karaoke" not in _texts(laptop), "sent without Ana's key"
    asyncio.run(phone.sync(folder, keys=[household, ana]))  # the phone is given the key
    asyncio.run(laptop.sync(folder, keys=[household, ana]))
    assert "karaoke" in _texts(laptop)
    # a sync that forgets the household key is refused, not sent again unsealed
    with pytest.raises(InvalidQuery, match="give it"):
        asyncio.run(phone.sync(folder, keys=[ana]))


def test_what_a_keyed_device_refuses(keyed: dict[str, MemFuse], tmp_path: Path) -> None:
    folder, household = tmp_path / "shared", SyncKey.new()
    ben, mia = keyed["ben-laptop"], keyed["mia-phone"]
    asyncio.run(ben.sync(folder, device="ben-laptop"))  # not sealed
    report = asyncio.run(mia.sync(folder, device="mia-phone", keys=[household]))
    assert [w for _, w in report.skipped] == ["not sealed, and this household's segments are"]
    assert "MU5101" not in _texts(mia)
    # once Ben's laptop is given the key it sends its records again, sealed
    asyncio.run(ben.sync(folder, keys=[household]))
    report = asyncio.run(mia.sync(folder, keys=[household]))
    assert report.received == 4 and "MU5101" in _texts(mia)
    assert report.skipped == [], "the plain segment is gone from the folder"
    assert b"MU5101" not in b"".join(p.read_bytes() for p in folder.rglob("*.jsonl"))
    # sealed with another household key
    other = tmp_path / "other"
    asyncio.run(keyed["ana-phone"].sync(other, device="ana-phone", keys=[SyncKey.new()]))
    report = asyncio.run(mia.sync(other, keys=[household]))
    assert [w for _, w in report.skipped] == [
        "sealed with another key for household than this device holds"]
    # a sealed segment altered, its checksum made to match: the seal tells
    third, key = tmp_path / "third", SyncKey.new()
    asyncio.run(ben.sync(third, keys=[key]))
    path = next((third / ROOT / "ben-laptop").glob("*.jsonl"))
    head, _, body = path.read_bytes().partition(b"\n")
    body = body[:40] + bytes([body[40] ^ 1]) + body[41:]
    header = json.loads(head) | {"sha256": hashlib.sha256(body).hexdigest()}
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)
    report = asyncio.run(mia.sync(third, keys=[key]))
    assert report.received == 0 and [w for _, w in report.skipped] == [
        "does not open with this device's key (altered, or sealed with another)"]
    with pytest.raises(InvalidQuery, match="two different keys"):
        asyncio.run(mia.sync(folder, keys=[household, SyncKey.new()]))


def test_key_files(tmp_path: Path, model_dir: Path, e5_dir: Path) -> None:
    key = SyncKey.new("ana")
    path = key.save(tmp_path / "ana.key")
    assert path.stat().st_mode & 0o777 == 0o600
    assert SyncKey.load(path) == key and key.group == "user:ana"
    with pytest.raises(InvalidQuery, match="never overwritten"):
        SyncKey.new().save(path)
    (tmp_path / "bad.key").write_text("{}")
    with pytest.raises(InvalidQuery, match="not a sync key file"):
        SyncKey.load(tmp_path / "bad.key")
    with pytest.raises(InvalidQuery, match="'household' or 'user:NAME'"):
        SyncKey("friends", bytes(32))
    made = _cli("sync-key", "--out", str(tmp_path / "household.key"))
    assert made.returncode == 0 and "a new key for household" in made.stdout
    # a key inside the synced folder would be copied to every device and service
    folder = tmp_path / "shared"
    (folder / "keys").mkdir(parents=True)
    inside = SyncKey.new().save(folder / "keys" / "household.key")
    common = ["--model-dir", str(model_dir), "--tz", "UTC"]
    done = _cli("sync", "--db", str(tmp_path / "m"), "--folder", str(folder), "--device",
                "d", "--key", str(inside), *common)
    assert done.returncode != 0 and "inside the synced folder" in done.stderr
    done = _cli("sync", "--db", str(tmp_path / "m"), "--folder", str(folder), "--device",
                "d", "--key", str(tmp_path / "household.key"), "--json", *common)
    assert done.returncode == 0, done.stderr
    header = json.loads(next((folder / ROOT / "d").glob("*.jsonl"), Path("/dev/null"))
                        .read_text().partition("\n")[0] or "{}")
    assert header == {} or header["sealed"] == "aes-256-gcm"
