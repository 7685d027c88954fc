"""Generated English–French pairs in two unrelated "domains", for selection and the WMT mirror."""

from __future__ import annotations

import random
from pathlib import Path

NOUNS = [
    ("cat", "chat"),
    ("dog", "chien"),
    ("bird", "oiseau"),
    ("horse", "cheval"),
    ("fox", "renard"),
    ("wolf", "loup"),
    ("goat", "bouc"),
    ("lion", "lion"),
]
ADJS = [("black", "noir"), ("small", "petit"), ("old", "vieux"), ("white", "blanc"), ("grey", "gris")]
VERBS = [("sees", "voit"), ("follows", "suit"), ("likes", "aime"), ("bites", "mord"), ("hears", "entend")]
BANKS = [("bank", "banque"), ("fund", "caisse"), ("broker", "courtière")]
FIRMS = [("company", "entreprise"), ("factory", "usine"), ("startup", "jeune pousse"), ("shop", "boutique")]
MONEY = [("lends", "prête"), ("invests", "investit"), ("pays", "verse")]


def animal_pair(rng: random.Random) -> tuple[str, str]:
    (n1e, n1f), (n2e, n2f) = rng.sample(NOUNS, 2)
    ae, af = rng.choice(ADJS)
    ve, vf = rng.choice(VERBS)
    return f"The {ae} {n1e} {ve} the {n2e}.", f"Le {n1f} {af} {vf} le {n2f}."


def finance_pair(rng: random.Random) -> tuple[str, str]:
    be, bf = rng.choice(BANKS)
    fe, ff = rng.choice(FIRMS)
    me, mf = rng.choice(MONEY)
    n = rng.randint(2, 990)
    return (
        f"The {be} {me} {n} million euros to the {fe} in 2014.",
        f"La {bf} {mf} {n} millions d'euros à l'{ff} en 2014.",
    )


def pairs(n: int, domain: str = "animals", seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    make = animal_pair if domain == "animals" else finance_pair
    return [make(rng) for _ in range(n)]


def write(prefix: Path, items: list[tuple[str, str]]) -> Path:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.en").write_text("".join(e + "\n" for e, _ in items), encoding="utf-8")
    Path(f"{prefix}.fr").write_text("".join(f + "\n" for _, f in items), encoding="utf-8")
    return prefix
