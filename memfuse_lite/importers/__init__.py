"""Importers: real app exports in, observations out (``memfuse import KIND PATH...``).

Each format is read with the well-kept parser for it (``icalendar`` and
``recurring-ical-events``, the standard library's ``mailbox``/``email``, ``vobject``,
``defusedxml``, ``exifread``); they come with the ``import`` extra.
"""

from . import (
    android,
    calendar,
    contacts,
    imessage,
    keep,
    mail,
    photos,
    table,
    telegram,
    timeline,
    whatsapp,
)
from .base import (
    IMPORTERS,
    ImportContext,
    Importer,
    ImportFailed,
    Item,
    Rejected,
    address_key,
    read,
    register,
    stream,
)

for _module in (contacts, calendar, mail, android, imessage, photos, whatsapp, telegram,
                keep, timeline, table):
    register(_module.IMPORTER)

__all__ = ["IMPORTERS", "ImportContext", "ImportFailed", "Importer", "Item", "Rejected",
           "address_key", "read", "register", "stream"]
