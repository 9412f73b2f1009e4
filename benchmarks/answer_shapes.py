"""Realistic (prediction, gold) pairs for GAIA and AssistantBench, made from templates.

Not a script: ``grading.py`` grades rows drawn from these pairs, and
``tests/unit/test_grading_realistic.py`` checks every pair's grades against a record.

The golds take the shapes the suites' golds have (what the official scorers branch on, as
``gaia/official_scorer.py`` and ``assistantbench/official_scorer.py`` describe them): GAIA's
integers,
decimals, money and percentages written as bare numbers, comma lists (some with numbers),
names, titles, dates and long phrases; AssistantBench's numbers with ``$``, ``%``,
``sqft`` or thousands commas, short and long strings, lists of lines, and JSON objects
(one per line, or a Python-style dict with single quotes). The predictions are what models
write for them: the answer itself, then with extra words, other casing, units, currency
signs, thousands separators, another order, another list separator, keys reordered or
missing, a near miss, a wrong answer, or nothing. Every value is made here from word lists
and a seeded random generator: no dataset row is copied.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

NAMES = [
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Katherine Johnson",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Claude Shannon",
    "Hedy Lamarr",
    "John von Neumann",
    "Frances Allen",
]
PLACES = [
    "Saint Petersburg",
    "Honolulu",
    "Braintree",
    "Reykjavik",
    "Buenos Aires",
    "Kuala Lumpur",
    "San Francisco",
    "Cape Town",
]
THINGS = [
    "broccoli",
    "celery",
    "sweet potatoes",
    "fresh basil",
    "green beans",
    "zucchini",
    "acorns",
    "bell pepper",
    "lettuce",
    "corn",
]
TITLES = [
    "The Lord of the Rings",
    "A Tale of Two Cities",
    "Glass Onion: A Knives Out Mystery",
    "Nosferatu the Vampyre",
    "Oko, Thief of Crowns",
    "Time-Parking 2: Parallel Universe",
    "The Hitchhiker's Guide to the Galaxy",
]
BUSINESSES = [
    "Crunch Fitness",
    "Renzo Gracie Jiu-Jitsu Wall Street",
    "McDonald's",
    "Blink Fitness Soho",
    "Whole Foods Market",
    "Trader Joe's",
    "CVS Pharmacy",
]
MONTHS = ["January", "March", "May", "July", "September", "November"]
FILLERS = [
    "The answer is {}",
    "{}.",
    "Final answer: {}",
    "Based on my research, the answer is {}.",
    "I found that it is {}",
    "**{}**",
]
UNITS = ["km", "kg", "years", "miles", "meters", "points"]

Pair = tuple[str | None, str]


def _number_text(rng: random.Random) -> tuple[float, str]:
    """A gold number as a dataset writes it: an integer, a decimal, or a large count."""
    kind = rng.randrange(4)
    if kind == 0:
        value: float = rng.randint(0, 120)
        return value, str(int(value))
    if kind == 1:
        value = round(rng.uniform(0, 100), rng.choice([1, 2, 3, 4]))
        return value, repr(value)
    if kind == 2:
        value = rng.randint(1000, 2_000_000)
        return value, str(int(value))
    value = round(rng.uniform(1000, 99999), 2)
    return value, f"{value:.2f}"


def _number_variants(rng: random.Random, value: float, text: str) -> list[str | None]:
    integral = float(value).is_integer()
    grouped = f"{int(value):,}" if integral else f"{value:,.2f}"
    off = value * rng.choice([1.003, 0.995, 1.04, 0.9, 2.0]) + (0 if value else 1)
    off_text = str(round(off)) if integral else f"{off:.2f}"
    return [
        text,
        grouped,
        f"${grouped}",
        f"{text}%",
        f"{text} {rng.choice(UNITS)}",
        rng.choice(FILLERS).format(text),
        f"approximately {text}",
        off_text,
        str(float(value)),
        "",
        None,
    ]


def _word_variants(rng: random.Random, gold: str) -> list[str | None]:
    other = rng.choice([*NAMES, *PLACES, *TITLES])
    words = gold.split()
    partial = " ".join(words[:-1]) if len(words) > 1 else gold[:-1]
    return [
        gold,
        gold.lower(),
        gold.upper(),
        f"The {gold}",
        rng.choice(FILLERS).format(gold),
        f'"{gold}"',
        gold.replace(" ", "-"),
        partial,
        other,
        f"{gold} ({rng.choice(PLACES)})",
        "",
        None,
    ]


def _list_variants(rng: random.Random, items: list[str], sep: str) -> list[str | None]:
    shuffled = items[:]
    rng.shuffle(shuffled)
    return [
        sep.join(items),
        ", ".join(items),
        ",".join(items),
        "; ".join(items),
        "\n".join(items),
        sep.join(reversed(items)),
        ", ".join(shuffled),
        ", ".join(item.lower() for item in items),
        ", ".join(items[:-1]),
        ", ".join([*items, rng.choice(THINGS)]),
        "The items are: " + ", ".join(items),
        json.dumps(items),
        "",
    ]


def _gaia_golds(rng: random.Random) -> list[tuple[str, list[str | None]]]:
    golds: list[tuple[str, list[str | None]]] = []
    for _ in range(14):
        value, text = _number_text(rng)
        golds.append((text, _number_variants(rng, value, text)))
    for name in rng.sample(NAMES, 5):
        golds.append((name, _word_variants(rng, name)))
    for title in rng.sample(TITLES, 4):
        golds.append((title, _word_variants(rng, title)))
    for place in rng.sample(PLACES, 3):
        golds.append((place, _word_variants(rng, place)))
    for _ in range(6):
        items = rng.sample(THINGS, rng.randint(2, 6))
        golds.append((", ".join(items), _list_variants(rng, items, ", ")))
    for _ in range(3):
        items = [str(rng.randint(1, 400)) for _ in range(rng.randint(2, 5))]
        golds.append((", ".join(items), _list_variants(rng, items, ", ")))
    for _ in range(3):
        day, year = rng.randint(1, 28), rng.randint(1900, 2023)
        month = rng.choice(MONTHS)
        gold = f"{month} {day}, {year}"  # a comma: the scorers read it as a list
        golds.append(
            (gold, [gold, f"{day} {month} {year}", f"{month} {day} {year}", f"{year}", None])
        )
    for _ in range(3):
        sentence = " ".join(rng.sample([*THINGS, "and", "with", "from", "for"], 9))
        golds.append((sentence, _word_variants(rng, sentence)))
    return golds


def _ab_number_golds(rng: random.Random) -> list[tuple[str, list[str | None]]]:
    golds: list[tuple[str, list[str | None]]] = []
    for _ in range(8):
        value, text = _number_text(rng)
        golds.append((text, _number_variants(rng, value, text)))
    for _ in range(3):
        price = rng.randint(5, 400)
        gold = f"${price}"
        golds.append((gold, [gold, str(price), f"{price} USD", f"${price + 5}", "free", None]))
    for _ in range(2):
        area = rng.randint(400, 3000)
        gold = f"{area} sqft"
        golds.append((gold, [gold, str(area), f"{area:,} square feet", f"{area - 50} sqft"]))
    for _ in range(2):
        share = rng.randint(1, 99)
        gold = f"{share}%"
        golds.append((gold, [gold, str(share), f"{share} percent", f"{share + 2}%"]))
    return golds


def _json_gold(rng: random.Random) -> tuple[dict[str, object], str]:
    shape = rng.randrange(3)
    if shape == 0:
        record: dict[str, object] = {
            "sender": rng.choice(["DHL", "FedEx", "UPS", "USPS"]),
            "price (usd)": str(rng.randint(20, 200)),
        }
    elif shape == 1:
        record = {"name": rng.choice(BUSINESSES), "distance (miles)": rng.randint(1, 30)}
    else:
        record = {
            "title": rng.choice(TITLES),
            "year": rng.randint(1950, 2023),
            "rating": round(rng.uniform(5, 9.5), 1),
        }
    return record, json.dumps(record)


def _json_variants(rng: random.Random, record: dict[str, object]) -> list[str | None]:
    keys = list(record)
    reordered = {key: record[key] for key in reversed(keys)}
    missing = {key: record[key] for key in keys[:-1]}
    wrong = {
        key: (f"{value} x" if isinstance(value, str) else value) for key, value in record.items()
    }
    as_text = {key: str(value) for key, value in record.items()}
    python_style = "{" + ", ".join(f"'{k}': '{v}'" for k, v in record.items()) + "}"
    return [
        json.dumps(record),
        json.dumps(reordered),
        json.dumps(missing),
        json.dumps(wrong),
        json.dumps(as_text),
        json.dumps(record, indent=2),
        json.dumps([record]),
        python_style,
        "Here is the result: " + json.dumps(record),
        ", ".join(str(value) for value in record.values()),
        "{}",
        None,
    ]


def _ab_structured_golds(rng: random.Random) -> list[tuple[str, list[str | None]]]:
    golds: list[tuple[str, list[str | None]]] = []
    for _ in range(6):
        record, gold = _json_gold(rng)
        golds.append((gold, _json_variants(rng, record)))
    for _ in range(2):
        records = [_json_gold(rng)[0] for _ in range(rng.randint(2, 3))]
        gold = "\n".join(json.dumps(record) for record in records)
        golds.append(
            (
                gold,
                [
                    gold,
                    "\n".join(json.dumps(record) for record in reversed(records)),
                    json.dumps(records),
                    json.dumps(records[0]),
                    "",
                ],
            )
        )
    record = {"name": rng.choice(BUSINESSES), "city": rng.choice(PLACES)}
    gold = "{" + ", ".join(f"'{k}': '{v}'" for k, v in record.items()) + "}"
    golds.append((gold, _json_variants(rng, record)))
    for _ in range(4):
        items = rng.sample(BUSINESSES + PLACES, rng.randint(2, 4))
        golds.append(("\n".join(items), _list_variants(rng, items, "\n")))
    return golds


def _ab_golds(rng: random.Random) -> list[tuple[str, list[str | None]]]:
    golds = _ab_number_golds(rng) + _ab_structured_golds(rng)
    for text in rng.sample(BUSINESSES, 5) + rng.sample(TITLES, 3) + rng.sample(NAMES, 3):
        golds.append((text, _word_variants(rng, text)))
    for _ in range(2):
        sentence = " ".join(rng.sample(THINGS + BUSINESSES, 8))
        golds.append((sentence, _word_variants(rng, sentence)))
    return golds


GENERATORS: dict[str, Callable[[random.Random], list[tuple[str, list[str | None]]]]] = {
    "gaia": _gaia_golds,
    "assistantbench": _ab_golds,
}


def realistic_pairs(suite: str, seed: int = 40) -> list[Pair]:
    """The suite's distinct (prediction, gold) pairs, in a fixed order for a seed."""
    rng = random.Random(f"{suite}-{seed}")
    pairs: list[Pair] = []
    seen: set[Pair] = set()
    for gold, predictions in GENERATORS[suite](rng):
        for prediction in predictions:
            pair = (prediction, gold)
            if pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    return pairs
