"""Hand-written multi-source scenarios (English and Chinese) for the fusion and retrieval tests.

Each row: (key, source, user, device, ts, text, meta, visibility). ``key`` is the
external id, so a test can name what it expects by key.
"""

from __future__ import annotations

from typing import Any

from memfuse_lite import Observation

Row = tuple[str, str, str, str, str, str, dict[str, Any], str]

DENTIST: list[Row] = [
    ("den-cal", "calendar", "ana", "laptop", "2025-03-03T08:00", "Dentist – Dr. Lin, Wed 15:00",
     {}, "household"),
    ("den-call", "call", "ana", "phone", "2025-03-04T12:05", "Call from Dr. Lin's clinic, 2 min",
     {"contactName": "Dr. Lin's clinic", "datetime_end": "2025-03-04T12:07:00"}, "household"),
    ("den-chat", "chat", "ana", "phone", "2025-03-04T12:10",
     "The clinic just called: my dentist appointment with Dr. Lin moved to Thursday 4pm",
     {}, "household"),
    ("den-sms", "sms", "ben", "phone", "2025-03-04T18:30",
     "Reminder: Ana's dentist appointment with Dr. Lin is Thursday 4pm, I'll pick up Mia",
     {"contactName": "Ana"}, "household"),
    ("den-photo", "photo", "ana", "phone", "2025-03-06T16:20",
     "Photo: waiting room of Dr. Lin dental clinic",
     {"location": {"poi": "Lin Dental Clinic", "city": "Shanghai"}}, "household"),
    ("noise-1", "note", "ana", "phone", "2025-03-05T09:00", "Grocery list: milk, eggs, bread",
     {}, "household"),
    ("noise-2", "push", "ben", "phone", "2025-03-05T20:00",
     "Your phone storage is almost full", {}, "household"),
    ("den-distractor", "calendar", "ana", "laptop", "2025-03-10T09:00",
     "Dentist – Dr. Lin, cleaning on March 20 at 15:00", {}, "household"),
]

TRIP: list[Row] = [
    ("trip-meet", "calendar", "ben", "laptop", "2025-04-07T09:00",
     "Client meeting with Zhou Tao in Beijing, Friday 15:00", {}, "household"),
    ("trip-dinner", "calendar", "ana", "laptop", "2025-04-08T10:00",
     "Dinner with the Wangs, Friday 19:00 at Haidilao", {}, "household"),
    ("trip-flight", "email", "ben", "laptop", "2025-04-11T08:00",
     "Airline notice: flight MU5101 to Beijing is delayed by three hours", {}, "household"),
    ("trip-move", "chat", "ben", "phone", "2025-04-11T08:20",
     "Moved the client meeting with Zhou Tao to 18:00 today because my flight is delayed",
     {}, "household"),
    ("trip-cancel", "sms", "ana", "phone", "2025-04-11T09:00",
     "Dinner with the Wangs is cancelled since Ben's client meeting now runs late",
     {"contactName": "Mrs. Wang"}, "household"),
]

GRANDMA: list[Row] = [
    ("gm-ana", "chat", "ana", "phone", "2025-05-07T12:00",
     "Family dinner at grandma's place on Saturday at 6pm", {}, "household"),
    ("gm-ben", "sms", "ben", "phone", "2025-05-08T12:00",
     "Family dinner at grandma's place Saturday 7pm, don't be late", {}, "household"),
    ("gm-private", "note", "ben", "phone", "2025-05-08T13:00",
     "Family dinner at grandma's on Saturday: bring the jade bracelet gift for Ana", {},
     "private"),
]

ZH_DENTIST: list[Row] = [
    ("zh-cal", "calendar", "妈妈", "laptop", "2025-06-02T08:00", "牙医预约：林医生，周三下午三点",
     {}, "household"),
    ("zh-call", "call", "妈妈", "phone", "2025-06-03T11:00", "林医生诊所来电，通话2分钟",
     {"contactName": "林医生诊所"}, "household"),
    ("zh-chat", "chat", "妈妈", "phone", "2025-06-03T11:05", "诊所刚打电话，林医生的牙医预约改到周四下午四点了",
     {}, "household"),
    ("zh-noise", "note", "爸爸", "phone", "2025-06-03T20:00", "周末去超市买水果和牛奶", {},
     "household"),
    ("zh-distractor", "calendar", "妈妈", "laptop", "2025-06-09T08:00",
     "牙医预约：林医生，6月20日下午三点洗牙", {}, "household"),
]


def observations(rows: list[Row]) -> list[Observation]:
    """The rows as observations."""
    return [Observation(source=src, user=user, device=dev, ts=ts, text=text, meta=meta,
                        visibility=vis, external_id=key)
            for key, src, user, dev, ts, text, meta, vis in rows]

_LENA = {"contactName": "Lena"}
EXCHANGE: list[Row] = [
    ("ex-ask", "sms", "ana", "phone", "2025-03-15T10:00",
     "Are you free for the climbing gym on Saturday?", _LENA, "private"),
    ("ex-parcel", "sms", "ana", "phone", "2025-03-15T10:03", "Your parcel is at the locker",
     {"contactName": "Post office"}, "private"),
    ("ex-ok", "sms", "ana", "phone", "2025-03-15T10:06", "ok", _LENA, "private"),
    ("ex-time", "sms", "ana", "phone", "2025-03-15T10:20", "great, see you at 7", _LENA,
     "private"),
    ("ex-ben", "sms", "ben", "phone", "2025-03-15T10:21", "sure thing", _LENA, "private"),
    ("ex-later", "sms", "ana", "phone", "2025-03-15T14:30", "how was the dentist?", _LENA,
     "private"),
]
"""An exchange with Lena (ask, ok, time), a message from someone else in between, Ben's
own conversation with Lena, and Ana's next message to her hours later."""
