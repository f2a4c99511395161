"""A deterministic corpus of a user's remembered facts, for banks of any size, and the questions asked of them.

Every fact is one sentence about the user's life (people, places, work, habits, plans), built from templates and
slot values with a seeded generator, so fact ``n`` is the same text on every run and every machine. The sentences
are what our agent retains after a turn once the LLM stand-in (``localdev.llm_stub``) has split it: one ``world``
fact per sentence, its capitalised words as entities. Facts are grouped into documents (turns) of
:data:`FACTS_PER_DOCUMENT` sentences, the unit the real retain path is fed with.

Standard library only: the bulk seeder imports it in Hindsight's virtualenv, the harness in the benchmark's.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

from localdev.stub_extraction import entities_of as stub_entities_of

__all__ = ["FACTS_PER_DOCUMENT", "Fact", "documents", "entities_of", "fact", "needles", "queries"]

#: Facts per retained document: a turn that taught the agent several things.
FACTS_PER_DOCUMENT = 10


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_PEOPLE = _words(
    "Ana Bruno Carla Diego Elena Farid Greta Hugo Ines Jonas Kira Luca Maya Nadia Omar Priya Quentin Rosa Sami "
    "Tomas Uma Victor Wendy Xavier Yara Zoltan Amir Beatriz Chen Dmitri Eva Felix Giulia Hana Ivan Julia Kenji "
    "Leila Marco Nora Oscar Paula Rafael Sofia Theo Ulla Vera Wim Yusuf Zara"
)
_RELATIONS = _words(
    "sister brother mother father daughter son cousin aunt uncle neighbour colleague manager friend partner "
    "grandmother grandfather niece nephew flatmate mentor"
)
_CITIES = _words(
    "Lisbon Berlin Porto Madrid Paris Lyon Milan Turin Vienna Prague Krakow Warsaw Oslo Bergen Stockholm Helsinki "
    "Dublin Cork Edinburgh Glasgow Leeds Bristol Amsterdam Utrecht Ghent Antwerp Zurich Geneva Munich Hamburg "
    "Seville Valencia Bologna Naples Athens Tallinn Riga Vilnius Budapest Ljubljana Zagreb Split Tokyo Osaka "
    "Kyoto Seoul Toronto Montreal Boston Denver"
)
_COMPANIES = _words(
    "Acme Globex Initech Umbrella Hooli Vandelay Wonka Stark Wayne Tyrell Cyberdyne Soylent Massive Aperture "
    "Oceanic Monarch Gringotts Nakatomi Pied Piper Dunder"
)
_FOODS = _words(
    "sushi ramen paella risotto tacos curry falafel pho dumplings lasagne goulash pierogi moussaka ceviche "
    "bibimbap couscous gnocchi borscht tapas croissants"
)
_HOBBIES = _words(
    "running cycling climbing swimming chess painting pottery gardening baking photography knitting sailing "
    "surfing hiking yoga boxing archery fencing birdwatching woodworking"
)
_INSTRUMENTS = _words("piano violin cello guitar drums flute trumpet saxophone harp ukulele")
_LANGUAGES = _words("Japanese Spanish German Italian Korean Portuguese Finnish Greek Dutch Polish Czech Turkish")
_DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_MONTHS = _words("January February March April May June July August September October November December")
_ALLERGIES = _words("peanuts shellfish gluten lactose pollen cats dust penicillin sesame kiwi")
_THINGS = _words("bicycle laptop camera kettle sofa guitar tent backpack watch phone car scooter drone printer blender")
_COLOURS = _words("red blue green yellow black white orange purple grey teal")

_TEMPLATES = (
    "My {rel} {person} lives in {city}.",
    "My {rel} {person} works at {company} as an engineer.",
    "I met {person} in {city} during {month} of {year}.",
    "My favourite food is {food}, especially the one from {city}.",
    "I go {hobby} every {day} morning with {person}.",
    "I am allergic to {allergy} since childhood.",
    "I started learning {language} in {month} {year}.",
    "My {rel} {person} plays the {instrument} in an orchestra.",
    "I bought a {colour} {thing} for {number} euros in {city}.",
    "My flight to {city} on {day} is booked with seat {number}.",
    "I worked at {company} in {city} for {small} years.",
    "{person} recommended a restaurant in {city} that serves {food}.",
    "I want to visit {city} with {person} next {month}.",
    "My invoice number for the {thing} order was {number}.",
    "My {rel} {person} has a birthday on {day} {small} {month}.",
    "I keep my {thing} at {person}'s place in {city}.",
    "I prefer {hobby} over {hobby2} on rainy days.",
    "I moved from {city} to {city2} in {year}.",
    "My dentist appointment is on {day} at {small} o'clock.",
    "I lent my {colour} {thing} to {person} last {month}.",
    "{person} and I are training for a {hobby} race in {city}.",
    "My team at {company} ships a release every {day}.",
    "I cook {food} for {person} when they visit from {city}.",
    "My {rel} {person} is learning {language} too.",
)


#: How a fact was said: appended to the template (keeps 100,000 facts distinct without longer templates).
_ASIDES = (
    "",
    " {person2} told me",
    " last {day}",
    " in {year2}",
    " with {person2}",
    " since {month2}",
    " according to {person2}",
    " for the {small2}th time",
    " near {city3}",
    " before moving to {city3}",
    " after talking to {person2}",
    " every {month2}",
)


@dataclass(frozen=True)
class Fact:
    """One remembered sentence, its position in the corpus, and the document (turn) it was retained in."""

    index: int
    text: str
    document: int


def fact(index: int) -> Fact:
    """Fact number ``index`` (0-based): the same text for the same index, everywhere."""
    rng = random.Random(index * 7919 + 17)
    template = _TEMPLATES[rng.randrange(len(_TEMPLATES))]
    city, city2 = rng.sample(_CITIES, 2)
    hobby, hobby2 = rng.sample(_HOBBIES, 2)
    aside = _ASIDES[rng.randrange(len(_ASIDES))]
    text = (template[:-1] + aside + template[-1]).format(
        rel=rng.choice(_RELATIONS),
        person=rng.choice(_PEOPLE),
        city=city,
        city2=city2,
        company=rng.choice(_COMPANIES),
        month=rng.choice(_MONTHS),
        year=rng.randrange(1995, 2027),
        food=rng.choice(_FOODS),
        hobby=hobby,
        hobby2=hobby2,
        day=rng.choice(_DAYS),
        allergy=rng.choice(_ALLERGIES),
        language=rng.choice(_LANGUAGES),
        instrument=rng.choice(_INSTRUMENTS),
        colour=rng.choice(_COLOURS),
        thing=rng.choice(_THINGS),
        number=rng.randrange(10, 99999),
        small=rng.randrange(1, 29),
        person2=rng.choice(_PEOPLE),
        year2=rng.randrange(1990, 2027),
        month2=rng.choice(_MONTHS),
        small2=rng.randrange(2, 40),
        city3=rng.choice(_CITIES),
    )
    return Fact(index=index, text=text, document=index // FACTS_PER_DOCUMENT)


def documents(start: int, stop: int) -> Iterator[tuple[int, list[Fact]]]:
    """The documents holding facts ``[start, stop)`` (both multiples of :data:`FACTS_PER_DOCUMENT`)."""
    if start % FACTS_PER_DOCUMENT or stop % FACTS_PER_DOCUMENT:
        raise ValueError(f"start and stop must be multiples of {FACTS_PER_DOCUMENT}")
    for doc in range(start // FACTS_PER_DOCUMENT, stop // FACTS_PER_DOCUMENT):
        first = doc * FACTS_PER_DOCUMENT
        yield doc, [fact(i) for i in range(first, first + FACTS_PER_DOCUMENT)]


def entities_of(text: str) -> list[str]:
    """The entities the LLM stand-in extracts from a sentence (its own rule: names and things, at most five)."""
    return stub_entities_of(text)


_QUESTIONS = (
    "Where does my {rel} live?",
    "What do you know about {person}?",
    "Which food do I like?",
    "When do I go {hobby}?",
    "Am I allergic to anything?",
    "Which languages am I learning?",
    "Who plays an instrument in my family?",
    "What did I buy in {city}?",
    "When is my next flight?",
    "Where have I worked before?",
    "Any restaurant tips for {city}?",
    "Where do I want to travel next?",
    "What was the invoice number of my last order?",
    "When is {person}'s birthday?",
    "Where did I leave my {thing}?",
    "What do I do when it rains?",
    "Where did I live before?",
    "When is my dentist appointment?",
    "Who borrowed my {thing}?",
    "Am I training for a race?",
)


def queries(count: int, seed: int = 5) -> list[str]:
    """``count`` questions a user asks at the start of a turn (paraphrases, never copies, of the facts)."""
    rng = random.Random(seed)
    return [
        rng.choice(_QUESTIONS).format(
            rel=rng.choice(_RELATIONS),
            person=rng.choice(_PEOPLE),
            hobby=rng.choice(_HOBBIES),
            city=rng.choice(_CITIES),
            thing=rng.choice(_THINGS),
        )
        for _ in range(count)
    ]


_NUMBER = re.compile(r"\b\d{4,5}\b")


def needles(limit: int, count: int) -> list[tuple[str, str]]:
    """``count`` (question, fact) pairs among facts ``[0, limit)``: a fact holding a rare number, asked by that
    number alone. Semantic search barely sees a number; the keyword arm finds it exactly."""
    out: list[tuple[str, str]] = []
    for index in range(limit):
        text = fact(index).text
        numbers = [n for n in _NUMBER.findall(text) if not 1990 <= int(n) <= 2030]  # years are not rare
        if numbers:
            out.append((f"What do you know about {numbers[0]}?", text))
            if len(out) == count:
                break
    return out
