"""Keys for folder sync: the household's, which every device of the household holds, and
one per person, which only that person's devices hold.

A key is 32 random bytes in a small file of its own (mode 0600), given to each device out
of band (copied by hand, a password manager, a QR code) and never written into the synced
folder. Segments are sealed with AES-256-GCM (the ``cryptography`` package, the ``sync``
extra): whoever holds the folder but not the key reads nothing and cannot forge a segment
that a device holding the key would apply.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidQuery, MemFuseError

KEY_FORMAT = "memfuse-sync-key"
HOUSEHOLD = "household"
"""The group of records every user of the household may see."""
USER_PREFIX = "user:"
"""A person's group: ``user:NAME`` holds the records only that person (and those they are
shared with) may see."""
NONCE_BYTES = 12


def _aead(secret: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:
        raise MemFuseError("sealed sync segments need the sync extra: "
                           "pip install 'memfuse_lite[sync]'") from exc
    return AESGCM(secret)


def user_group(user: str) -> str:
    """The group of one person's devices."""
    return USER_PREFIX + user


@dataclass(frozen=True)
class SyncKey:
    """The key of one group (:data:`HOUSEHOLD` or ``user:NAME``)."""

    group: str
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != 32:
            raise InvalidQuery("a sync key is 32 bytes")
        if self.group != HOUSEHOLD and not (self.group.startswith(USER_PREFIX)
                                            and len(self.group) > len(USER_PREFIX)):
            raise InvalidQuery(f"sync key group {self.group!r}: '{HOUSEHOLD}' or "
                               f"'{USER_PREFIX}NAME'")

    @classmethod
    def new(cls, user: str | None = None) -> SyncKey:
        """A fresh random key: the household's, or ``user``'s own."""
        return cls(HOUSEHOLD if user is None else user_group(user), os.urandom(32))

    @property
    def key_id(self) -> str:
        """A name for the key that reveals nothing of it (written in segment headers, so a
        device can tell a key it lacks from a wrong one)."""
        return hashlib.sha256(b"memfuse-sync-key-id\x00" + self.secret).hexdigest()[:16]

    def save(self, path: str | Path) -> Path:
        """Write the key to a new file readable by its owner only (never overwrites)."""
        out = Path(path).expanduser()
        body = json.dumps({"format": KEY_FORMAT, "group": self.group,
                           "key": base64.b64encode(self.secret).decode()}) + "\n"
        try:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as exc:
            raise InvalidQuery(f"{out} exists: a key file is never overwritten") from exc
        with os.fdopen(fd, "w") as f:
            f.write(body)
        return out

    @classmethod
    def load(cls, path: str | Path) -> SyncKey:
        """Read a key file written by :meth:`save` (``memfuse sync-key``)."""
        src = Path(path).expanduser()
        try:
            obj = json.loads(src.read_text())
            if obj.get("format") != KEY_FORMAT:
                raise ValueError("format")
            return cls(str(obj["group"]), base64.b64decode(obj["key"], validate=True))
        except OSError as exc:
            raise InvalidQuery(f"sync key {src}: {exc.strerror or exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidQuery(f"{src} is not a sync key file") from exc

    def seal(self, plain: bytes, bound: bytes) -> bytes:
        """``plain`` encrypted and authenticated, together with ``bound`` (not secret)."""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + bytes(_aead(self.secret).encrypt(nonce, plain, bound))

    def open(self, sealed: bytes, bound: bytes) -> bytes:
        """The plain bytes of :meth:`seal`'s output; ValueError when it was not sealed by
        this key with this ``bound`` or was altered since."""
        aead = _aead(self.secret)
        from cryptography.exceptions import InvalidTag

        try:
            return bytes(aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:],
                                                    bound))
        except InvalidTag as exc:
            raise ValueError("does not open with this device's key (altered, or sealed "
                             "with another)") from exc
