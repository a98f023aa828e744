"""Scene templates. Each draws its slot values, lays the happening on the timeline and
renders it into observations that each carry only part of it, from several users'
apps, in English or Chinese, with questions whose checklist comes from those slots.

``keep`` (for distractors) fixes the identity slots — same provider, same shop, same
friend — so the distractor is a near-identical scene on another day, for another user
or with other details.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any

from .model import Draft, QuestionDraft, Scene
from .text import day_aliases, day_text, money, money_aliases, time_aliases, time_text

Template = Callable[[random.Random, list[str], str, date, dict[str, Any] | None, bool], Scene]

KINDS = [  # (en, zh, providers)
    ("dentist", "牙医", ["Dr. Lin", "Dr. Patel", "Dr. Okafor", "Dr. Moreau", "Dr. Tanaka"]),
    ("physiotherapy", "理疗", ["Dr. Weber", "Dr. Silva", "Dr. Kowalski", "Dr. Haddad"]),
    ("eye test", "验光", ["Dr. Novak", "Dr. Rossi", "Dr. Ibrahim", "Dr. Chen"]),
    ("vet", "宠物医生", ["Dr. Murphy", "Dr. Sato", "Dr. Jensen", "Dr. Alvarez"]),
]
REASONS = [  # (en, zh, aliases)
    ("is ill", "生病了", ["ill", "sick", "生病"]),
    ("has a burst pipe at the clinic", "诊所水管爆裂", ["burst pipe", "水管爆裂"]),
    ("double-booked the slot", "排班重复了", ["double-booked", "排班重复"]),
    ("lost power at the clinic", "诊所停电", ["lost power", "停电"]),
    ("is away at a conference", "去开会了", ["conference", "开会"]),
    ("has a family emergency", "家里有急事", ["family emergency", "急事"]),
    ("broke a wrist", "手腕骨折了", ["wrist", "手腕"]),
    ("has a flooded waiting room", "候诊室被水淹了", ["flooded", "水淹"]),
    ("is stuck abroad after a volcano closed the airport", "因火山关闭机场滞留国外",
     ["volcano", "火山"]),
]
CITIES = [("Beijing", "北京"), ("Chengdu", "成都"), ("Osaka", "大阪"), ("Singapore", "新加坡"),
          ("Berlin", "柏林"), ("Hangzhou", "杭州")]
DELAYS = [("a thunderstorm", "雷暴", ["thunderstorm", "雷暴"]),
          ("a technical fault", "机械故障", ["technical fault", "机械故障"]),
          ("air traffic control", "空中管制", ["air traffic control", "空中管制"]),
          ("fog", "大雾", ["fog", "大雾"]), ("a bird strike", "鸟击", ["bird strike", "鸟击"]),
          ("a crew shortage", "机组人员不足", ["crew shortage", "机组人员不足"]),
          ("heavy snow", "大雪", ["heavy snow", "大雪"])]
AIRLINES = ["MU", "CA", "CZ", "HO", "SQ", "LH"]
PEOPLE = ["Zhou Tao", "Maria Gomez", "Kenji Ito", "Priya Nair", "Tom Becker", "Li Wei",
          "Sara Kim", "Omar Aziz", "Wang Fang", "Lucas Martin"]
SHOPS = [("Riverside Electronics", "coffee grinder", "咖啡研磨机"),
         ("Blue Door Books", "atlas", "地图册"), ("Maple Home", "desk lamp", "台灯"),
         ("Sunny Toys", "model train", "火车模型"), ("Peak Outdoor", "tent", "帐篷"),
         ("Green Leaf Garden", "bonsai tree", "盆景")]
COURIERS = ["SF Express", "JD Logistics", "DHL", "Cainiao"]
RESTAURANTS = ["Haidilao", "Lotus Garden", "Trattoria Roma", "Blue Fin Sushi",
               "Golden Dragon", "Cafe Soleil", "Spice Route"]
PARTY_ITEMS = [("birthday cake", "生日蛋糕"), ("balloons", "气球"), ("paper lanterns", "纸灯笼"),
               ("a board game", "桌游"), ("fruit platter", "水果拼盘"), ("party hats", "派对帽")]
APPLIANCES = [("washing machine", "洗衣机", "leaking water", "漏水", ["leak", "漏水"]),
              ("fridge", "冰箱", "not cooling", "不制冷", ["not cooling", "不制冷"]),
              ("boiler", "热水器", "no hot water", "没有热水", ["no hot water", "没有热水"]),
              ("dishwasher", "洗碗机", "not draining", "不排水", ["not draining", "不排水"]),
              ("oven", "烤箱", "not heating", "不加热", ["not heating", "不加热"]),
              ("air conditioner", "空调", "dripping water", "滴水", ["dripping", "滴水"]),
              ("dryer", "烘干机", "making a loud noise", "噪音很大", ["loud noise", "噪音"])]
PARTS = [("drain pump", "排水泵"), ("thermostat", "温控器"), ("door seal", "门封条"),
         ("control board", "控制板"), ("heating element", "加热管")]
STREETS = ["Elm Road", "Harbour Street", "Nanjing West Road", "Park Lane", "Hill Avenue",
           "Canal Street"]
BRING = [("insurance card", "医保卡"), ("previous X-rays", "以前的X光片"),
         ("medication list", "用药清单"), ("vaccination record", "疫苗记录")]
REPAIRERS = ["FixIt Home Services", "QuickFix Appliances", "HomeCare Repairs",
             "Ace Appliance Repair", "Bright Star Repairs", "Sunrise Home Fix",
             "Golden Key Services"]


def _at(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime.combine(day, time(hour, minute))


def _pick(rng: random.Random, pool: list[Any], keep: dict[str, Any] | None, slot: str,
          avoid: object = None) -> Any:
    """A fresh value for ``slot`` (kept for distractors when ``slot`` is an identity slot)."""
    if keep is not None and slot in keep:
        return keep[slot]
    choices = [p for p in pool if p != avoid] or pool
    return rng.choice(choices)


def _name(user: str) -> str:
    return user.capitalize()


def appointment(rng: random.Random, users: list[str], lang: str, day: date,
                keep: dict[str, Any] | None, conflict: bool) -> Scene:
    """A clinic appointment; with a conflict the clinic moves it and a stale reminder stays."""
    owner, partner = rng.sample(users, 2)
    kind = _pick(rng, KINDS, keep, "kind")
    doc = _pick(rng, kind[2], keep, "doc")
    clinic = f"{doc.split()[-1]} {'Dental' if kind[0] == 'dentist' else 'Care'} Clinic"
    orig = _at(day + timedelta(days=rng.randint(3, 6)), rng.choice([9, 10, 11, 14, 15, 16]),
               rng.choice([0, 30]))
    new = _at(orig.date() + timedelta(days=rng.choice([1, 2, 7])), rng.choice([9, 10, 15, 16,
              17]), rng.choice([0, 30]))
    reason = rng.choice(REASONS)
    en = lang == "en"
    k = kind[0] if en else kind[1]
    drafts = [Draft("calendar", "calendar", owner, "laptop", _at(day, 8, rng.randint(0, 59)),
                    f"{k.capitalize()} – {doc}, {day_text(orig.date(), lang)} {time_text(orig)} "
                    f"at {clinic}" if en else
                    f"{k}预约 – {doc}，{day_text(orig.date(), lang)} {time_text(orig)}，地点：{clinic}",
                    "household"),
              Draft("reminder", "push", partner, "phone", _at(day, 20, rng.randint(0, 59)),
                    f"Family calendar: {_name(owner)}'s {k} appointment "
                    f"{day_text(orig.date(), lang)} {time_text(orig)}" if en else
                    f"家庭日历提醒：{_name(owner)}的{k}预约 {day_text(orig.date(), lang)} "
                    f"{time_text(orig)}", "private")]
    scene = Scene("appointment", lang, drafts[0].ts, drafts,
                  slots={"kind": kind, "doc": doc, "reason": reason[0],
                         "orig": orig.isoformat(), "new": new.isoformat() if conflict else None})
    street = f"{rng.randint(2, 188)} {rng.choice(STREETS)}"
    bring = rng.choice(BRING)
    drafts.append(Draft("confirm", "sms", owner, "phone", _at(day, 8, 40) + timedelta(hours=2),
                        f"{clinic}: please bring your {bring[0]} to your appointment. "
                        f"Address: {street}" if en else
                        f"{clinic}：就诊请携带{bring[1]}。地址：{street}", "private",
                        {"contactName": clinic}))
    scene.questions.append(QuestionDraft(
        "cross-source fusion", owner,
        f"When was {_name(owner)}'s {k} appointment with {doc} first booked for, at what "
        "address, and what should be brought?" if en else
        f"{_name(owner)}和{doc}的{k}预约最初定在什么时候？地址在哪？要带什么？",
        f"{day_text(orig.date(), 'en')} {time_text(orig)} at {street}; bring the {bring[0]}.",
        [day_aliases(orig.date()), time_aliases(orig), [street], list(bring)],
        ["calendar", "confirm"], "orig"))
    if not conflict:
        return scene
    moved = orig.date() + timedelta(days=-1)
    call_ts = _at(moved, 11, rng.randint(0, 40))
    drafts += [
        Draft("sms", "sms", owner, "phone", call_ts - timedelta(minutes=30),
              f"{clinic}: we are sorry, {doc} {reason[0]}. Your appointment on "
              f"{day_text(orig.date(), lang)} has to be rebooked, we will call you." if en else
              f"{clinic}：抱歉，{doc}{reason[1]}，您{day_text(orig.date(), lang)}的预约需要改期，"
              "我们会致电您。", "private", {"contactName": clinic}),
        Draft("call", "call", owner, "phone", call_ts,
              f"Incoming call from {clinic}, 3 min" if en else f"来电：{clinic}，通话3分钟",
              "private", {"contactName": clinic}),
        Draft("chat", "chat", owner, "phone", call_ts + timedelta(minutes=6),
              f"The clinic rang: my {k} appointment is now {day_text(new.date(), lang)} "
              f"{time_text(new)}, can you take the kids?" if en else
              f"诊所来电了：我的{k}预约改到{day_text(new.date(), lang)} {time_text(new)}，"
              "你能接孩子吗？", [partner]),
    ]
    scene.links += [("sms", "call", "causal"), ("sms", "chat", "causal"),
                    ("chat", "calendar", "supersedes")]
    when = [day_aliases(new.date()), time_aliases(new)]
    scene.questions += [
        QuestionDraft("cross-source causality", owner,
                      f"Why did {_name(owner)}'s {k} appointment move to "
                      f"{day_text(new.date(), lang)}?" if en else
                      f"{_name(owner)}的{k}预约为什么改到{day_text(new.date(), lang)}？",
                      f"Because {doc} {reason[0]}.", [reason[2]], ["sms", "chat"], "reason"),
        QuestionDraft("conflict arbitration", partner,
                      f"When is {_name(owner)}'s {k} appointment with {doc}?" if en else
                      f"{_name(owner)}和{doc}的{k}预约是什么时候？",
                      f"{day_text(new.date(), 'en')} at {time_text(new)} (moved from "
                      f"{day_text(orig.date(), 'en')} {time_text(orig)}).", when,
                      ["chat"], "new"),
        QuestionDraft("perspective difference", partner,
                      f"What time does {_name(partner)}'s reminder give for {_name(owner)}'s "
                      f"{k} appointment, and what time did {_name(owner)} say it is?" if en else
                      f"{_name(partner)}的提醒里{_name(owner)}的{k}预约是几点？"
                      f"{_name(owner)}说的是几点？",
                      f"The reminder says {time_text(orig)}; {_name(owner)} said {time_text(new)}.",
                      [time_aliases(orig), time_aliases(new)], ["reminder", "chat"], "new"),
    ]
    return scene


def trip(rng: random.Random, users: list[str], lang: str, day: date,
         keep: dict[str, Any] | None, conflict: bool) -> Scene:
    """A work trip: the flight is delayed, the meeting moves, the evening plan is cancelled."""
    traveller, partner = rng.sample(users, 2)
    city = _pick(rng, CITIES, keep, "city")
    client = _pick(rng, PEOPLE, keep, "client")
    friend = rng.choice([p for p in PEOPLE if p != client])
    flight = f"{rng.choice(AIRLINES)}{rng.randint(1000, 9999)}"
    delay = rng.choice(DELAYS)
    hours = rng.randint(2, 5)
    fly = day + timedelta(days=rng.randint(2, 5))
    dep = _at(fly, rng.choice([7, 8, 9]), rng.choice([0, 30]))
    meet = _at(fly, rng.choice([14, 15]), 0)
    land = dep + timedelta(hours=2 + hours, minutes=rng.choice([0, 10, 20, 40]))
    en = lang == "en"
    c = city[0] if en else city[1]
    drafts = [
        Draft("booking", "email", traveller, "laptop", _at(day, 9, rng.randint(0, 59)),
              f"Booking confirmed: flight {flight} to {c} on {day_text(fly, lang)}, departs "
              f"{time_text(dep)}" if en else
              f"订票成功：{day_text(fly, lang)} {flight} 航班飞往{c}，{time_text(dep)} 起飞",
              "private"),
        Draft("meeting", "calendar", traveller, "laptop", _at(day, 10, rng.randint(0, 59)),
              f"Meeting with {client} in {c}, {day_text(fly, lang)} {time_text(meet)}" if en else
              f"与{client}在{c}开会，{day_text(fly, lang)} {time_text(meet)}", "household"),
        Draft("delay", "push", traveller, "phone", dep - timedelta(hours=1),
              f"Flight {flight} is delayed by {hours} hours due to {delay[0]}" if en else
              f"航班{flight}因{delay[1]}延误{hours}小时", "private"),
        Draft("chat", "chat", traveller, "phone", dep - timedelta(minutes=40),
              f"My flight is delayed, I now land in {c} at {time_text(land)}. I moved the meeting "
              f"with {client} to tomorrow, so I can't make dinner with {friend} tonight" if en else
              f"航班延误了，我{time_text(land)}才到{c}。和{client}的会改到明天了，"
              f"今晚和{friend}的晚饭去不了了", [partner]),
        Draft("cancel", "sms", partner, "phone", dep + timedelta(minutes=20),
              f"To {friend}: sorry, tonight's dinner is off, {_name(traveller)} is stuck because "
              "the flight was delayed" if en else
              f"发给{friend}：抱歉，今晚的晚饭取消了，{_name(traveller)}的航班延误了",
              "private", {"contactName": friend}),
    ]
    scene = Scene("trip", lang, drafts[0].ts, drafts,
                  links=[("delay", "chat", "causal"), ("chat", "cancel", "causal"),
                         ("chat", "meeting", "supersedes")],
                  slots={"city": city, "client": client, "land": land.isoformat(), "flight": flight,
                         "delay": delay[0]})
    scene.questions += [
        QuestionDraft("cross-source causality", traveller,
                      f"Why did {_name(traveller)} move the meeting with {client}?" if en else
                      f"{_name(traveller)}为什么把和{client}的会改期了？",
                      f"The flight {flight} was delayed by {delay[0]}.",
                      [delay[2]], ["delay", "chat"], "delay"),
        QuestionDraft("cross-user query", partner,
                      f"When does {_name(traveller)} land in {c}?" if en else
                      f"{_name(traveller)}几点到{c}？",
                      f"At {time_text(land)}.", [time_aliases(land)], ["chat"], "land"),
        QuestionDraft("cross-source fusion", traveller,
                      f"Which flight did {_name(traveller)} take to {c} for the meeting with "
                      f"{client}, and when was the meeting planned?" if en else
                      f"{_name(traveller)}去{c}见{client}坐的哪个航班？会议原定什么时候？",
                      f"{flight}; the meeting was planned for {time_text(meet)}.",
                      [[flight], time_aliases(meet)], ["booking", "meeting"], "flight"),
    ]
    return scene


def delivery(rng: random.Random, users: list[str], lang: str, day: date,
             keep: dict[str, Any] | None, conflict: bool) -> Scene:
    """An online order: paid by one user, left with a neighbour, picked up by another."""
    buyer, helper = rng.sample(users, 2)
    shop, item_en, item_zh = _pick(rng, SHOPS, keep, "shop")
    price = round(rng.uniform(60, 900), 2)
    courier = rng.choice(COURIERS)
    neighbour = rng.choice(PEOPLE)
    arrive = day + timedelta(days=rng.randint(2, 4))
    en = lang == "en"
    item = item_en if en else item_zh
    drafts = [
        Draft("payment", "payment", buyer, "phone", _at(day, 21, rng.randint(0, 59)),
              f"Paid {money(price, lang)} to {shop} for a {item}" if en else
              f"向{shop}支付{money(price, lang)}，购买{item}", "private"),
        Draft("push", "push", buyer, "phone", _at(arrive, 8, rng.randint(0, 59)),
              f"{courier}: your parcel from {shop} arrives today" if en else
              f"{courier}：您来自{shop}的包裹今天送达", "private"),
        Draft("courier", "sms", helper, "phone", _at(arrive, 14, rng.randint(0, 59)),
              f"{courier}: nobody home, parcel for {_name(buyer)} left with {neighbour}" if en else
              f"{courier}：家中无人，{_name(buyer)}的包裹已交给{neighbour}", "private",
              {"contactName": courier}),
        Draft("chat", "chat", helper, "phone", _at(arrive, 18, rng.randint(0, 59)),
              f"Picked up your {item} from {neighbour}'s place" if en else
              f"你的{item}我从{neighbour}家拿回来了", [buyer]),
    ]
    scene = Scene("delivery", lang, drafts[0].ts, drafts,
                  links=[("payment", "push", "causal"), ("courier", "chat", "causal")],
                  slots={"shop": (shop, item_en, item_zh), "price": price,
                         "neighbour": neighbour})
    scene.questions += [
        QuestionDraft("cross-source fusion", buyer,
                      f"What did {_name(buyer)} buy from {shop}, for how much, and who kept the "
                      "parcel?" if en else
                      f"{_name(buyer)}在{shop}买了什么，花了多少钱，包裹放在谁那里？",
                      f"A {item_en} for {money(price, 'en')}; {neighbour} kept it.",
                      [[item_en, item_zh], money_aliases(price), [neighbour]],
                      ["payment", "chat"], "price"),
        QuestionDraft("cross-user query", buyer,
                      f"Who brought {_name(buyer)}'s parcel from {shop} home?" if en else
                      f"谁把{_name(buyer)}在{shop}买的包裹拿回家的？",
                      f"{_name(helper)}, from {neighbour}'s place.",
                      [[_name(helper)], [neighbour]], ["chat", "push"], "neighbour"),
    ]
    return scene


def party(rng: random.Random, users: list[str], lang: str, day: date,
          keep: dict[str, Any] | None, conflict: bool) -> Scene:
    """A birthday party several household members shop for."""
    guest = _pick(rng, PEOPLE, keep, "guest")
    shoppers = users[:]
    rng.shuffle(shoppers)
    shoppers = shoppers[: min(len(shoppers), 3)]
    items = rng.sample(PARTY_ITEMS, len(shoppers))
    prices = [round(rng.uniform(20, 300), 2) for _ in shoppers]
    when = _at(day + timedelta(days=rng.randint(4, 8)), rng.choice([12, 15, 18]), 0)
    en = lang == "en"
    drafts = [Draft("calendar", "calendar", shoppers[0], "laptop", _at(day, 9, 5),
                    f"{guest}'s birthday party at home, {day_text(when.date(), lang)} "
                    f"{time_text(when)}" if en else
                    f"{guest}的生日派对（在家），{day_text(when.date(), lang)} {time_text(when)}",
                    "household")]
    for i, (user, item, price) in enumerate(zip(shoppers, items, prices, strict=True)):
        drafts.append(Draft(f"pay{i}", "payment", user, "phone",
                            _at(day + timedelta(days=1 + i), 17, rng.randint(0, 59)),
                            f"Paid {money(price, lang)} for {item[0]} for {guest}'s party" if en
                            else f"为{guest}的派对买{item[1]}，支付{money(price, lang)}",
                            "household"))
    scene = Scene("party", lang, drafts[0].ts, drafts,
                  links=[("calendar", f"pay{i}", "causal") for i in range(len(shoppers))],
                  slots={"guest": guest, "items": [i[0] for i in items], "prices": prices})
    total = round(sum(prices), 2)
    scene.questions.append(QuestionDraft(
        "cross-user aggregation", shoppers[-1],
        f"What did the household buy for {guest}'s birthday party, and what did each item cost?"
        if en else f"家里为{guest}的生日派对买了哪些东西，各花了多少钱？",
        "; ".join(f"{_name(u)}: {i[0]} {money(p, 'en')}" for u, i, p
                  in zip(shoppers, items, prices, strict=True)) + f" (total {money(total, 'en')})",
        [list(i) for i in items] + [money_aliases(p) for p in prices],
        [f"pay{i}" for i in range(len(shoppers))], "items"))
    return scene


def dinner(rng: random.Random, users: list[str], lang: str, day: date,
           keep: dict[str, Any] | None, conflict: bool) -> Scene:
    """Dinner with a friend; with a conflict the venue changes and a calendar stays stale."""
    host, other = rng.sample(users, 2)
    friend = _pick(rng, PEOPLE, keep, "friend")
    first = rng.choice(RESTAURANTS)
    final = rng.choice([r for r in RESTAURANTS if r != first]) if conflict else first
    when = _at(day + timedelta(days=rng.randint(1, 4)), rng.choice([18, 19]),
               rng.choice([0, 30]))
    bill = round(rng.uniform(150, 800), 2)
    en = lang == "en"
    drafts = [
        Draft("plan", "chat", host, "phone", _at(day, 12, rng.randint(0, 59)),
              f"Dinner with {friend} at {first} on {day_text(when.date(), lang)} "
              f"{time_text(when)}, booked a table" if en else
              f"和{friend}{day_text(when.date(), lang)} {time_text(when)}在{first}吃饭，已订位",
              [other]),
        Draft("calendar", "calendar", other, "laptop", _at(day, 13, rng.randint(0, 59)),
              f"Dinner with {friend} – {first}, {day_text(when.date(), lang)} "
              f"{time_text(when)}" if en else
              f"和{friend}吃晚饭 – {first}，{day_text(when.date(), lang)} {time_text(when)}",
              "household"),
        Draft("payment", "payment", host, "phone", when + timedelta(hours=2),
              f"Paid {money(bill, lang)} at {final}" if en else
              f"在{final}消费{money(bill, lang)}", "household"),
    ]
    scene = Scene("dinner", lang, drafts[0].ts, drafts,
                  slots={"friend": friend, "first": first, "final": final, "bill": bill,
                         "day": when.date().isoformat()})
    if conflict:
        drafts.append(Draft("move", "sms", host, "phone", when - timedelta(hours=5),
                            f"From {friend}: {first} is fully booked tonight, let's meet at "
                            f"{final} instead, same time" if en else
                            f"来自{friend}：{first}今晚满了，改去{final}吧，时间不变", "household",
                            {"contactName": friend}))
        scene.links += [("move", "payment", "causal"), ("move", "plan", "supersedes")]
        scene.questions += [
            QuestionDraft("conflict arbitration", other,
                          f"Where did {_name(host)} have dinner with {friend} on "
                          f"{day_text(when.date(), lang)}?" if en else
                          f"{_name(host)}{day_text(when.date(), lang)}和{friend}在哪里吃的晚饭？",
                          f"At {final} (moved from {first}).", [[final]],
                          ["move", "payment"], "final"),
            QuestionDraft("perspective difference", host,
                          f"Which restaurant does {_name(other)}'s calendar show for the dinner "
                          f"with {friend}, and where did it actually happen?" if en else
                          f"{_name(other)}的日历里和{friend}的晚饭在哪家餐厅？实际在哪里吃的？",
                          f"The calendar says {first}; it happened at {final}.",
                          [[first], [final]], ["calendar", "payment"], "final"),
        ]
    scene.questions.append(QuestionDraft(
        "cross-source fusion", host,
        f"How much was the bill for the dinner with {friend}, and at what time was it booked?"
        if en else f"和{friend}那顿晚饭花了多少钱？订的几点？",
        f"{money(bill, 'en')}, booked for {time_text(when)}.",
        [money_aliases(bill), time_aliases(when)], ["plan", "payment"], "bill"))
    return scene


def repair(rng: random.Random, users: list[str], lang: str, day: date,
           keep: dict[str, Any] | None, conflict: bool) -> Scene:
    """A broken appliance: noticed in a note, a call, a visit, a part replaced, a payment."""
    owner, other = rng.sample(users, 2)
    app = _pick(rng, APPLIANCES, keep, "appliance")
    company = _pick(rng, REPAIRERS, keep, "company")
    part = rng.choice(PARTS)
    price = round(rng.uniform(120, 1200), 2)
    visit = _at(day + timedelta(days=rng.randint(1, 3)), rng.choice([9, 10, 13, 14]), 0)
    en = lang == "en"
    a = app[0] if en else app[1]
    drafts = [
        Draft("note", "note", owner, "phone", _at(day, 7, rng.randint(0, 59)),
              f"The {a} is {app[2]} again, need to call someone" if en else
              f"{a}又{app[3]}了，得找人来修", "private"),
        Draft("call", "call", owner, "phone", _at(day, 9, rng.randint(0, 59)),
              f"Outgoing call to {company}, 5 min" if en else f"去电：{company}，通话5分钟",
              "private", {"contactName": company}),
        Draft("visit", "calendar", owner, "laptop", _at(day, 9, 50),
              f"{company} technician visit, {day_text(visit.date(), lang)} {time_text(visit)}"
              if en else f"{company}上门维修，{day_text(visit.date(), lang)} {time_text(visit)}",
              "household"),
        Draft("chat", "chat", other, "phone", visit + timedelta(hours=2),
              f"The technician replaced the {part[0]} of the {a}" if en else
              f"师傅把{a}的{part[1]}换了", [owner]),
        Draft("payment", "payment", other, "phone", visit + timedelta(hours=2, minutes=5),
              f"Paid {money(price, lang)} to {company}" if en else
              f"向{company}支付{money(price, lang)}", "household"),
    ]
    scene = Scene("repair", lang, drafts[0].ts, drafts,
                  links=[("note", "call", "causal"), ("call", "visit", "causal"),
                         ("visit", "chat", "causal"), ("visit", "payment", "causal")],
                  slots={"appliance": app, "company": company, "part": part[0], "price": price})
    scene.questions += [
        QuestionDraft("cross-source causality", owner,
                      f"Why did a technician from {company} come on "
                      f"{day_text(visit.date(), lang)}?" if en else
                      f"{company}的师傅{day_text(visit.date(), lang)}为什么上门？",
                      f"The {app[0]} was {app[2]}.", [[app[0], app[1]], app[4]],
                      ["note", "visit"], "appliance"),
        QuestionDraft("cross-source fusion", owner,
                      f"What part of the {a} was replaced and how much was paid to {company}?"
                      if en else f"{a}换了什么零件？付给{company}多少钱？",
                      f"The {part[0]}; {money(price, 'en')}.",
                      [list(part), money_aliases(price)], ["chat", "payment"], "price"),
    ]
    return scene


TEMPLATES: dict[str, Template] = {
    "appointment": appointment, "trip": trip, "delivery": delivery, "party": party,
    "dinner": dinner, "repair": repair,
}
IDENTITY = {"appointment": ("kind", "doc"), "trip": ("city", "client"), "delivery": ("shop",),
            "party": ("guest",), "dinner": ("friend",), "repair": ("company",)}
