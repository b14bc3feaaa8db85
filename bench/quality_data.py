"""The datasets of bench/quality.py: ContractNLI dev as one corpus of NDAs with its 17
hypotheses asked as corpus-wide questions, and seeded CUAD rooms of contracts with clause
categories asked as questions. Gold documents and gold evidence come from the annotations;
the questions are plain words written once, not tuned to the engine.

Reads ../shared/data (never copied into the repo)."""

import ast
import csv
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

# ContractNLI hypothesis -> the question a user would ask of the whole collection.
CONTRACTNLI_QUESTIONS = {
    "nda-11": "Do these agreements forbid the receiving party from reverse engineering the disclosing "
    "party's materials?",
    "nda-16": "Do these agreements require the receiving party to return or destroy confidential "
    "information when the agreement ends?",
    "nda-15": "Do the agreements say that no licence or other right to the confidential information is "
    "granted to the receiving party?",
    "nda-10": "Which agreements require the parties to keep the existence or the terms of the agreement "
    "itself confidential?",
    "nda-2": "Is confidential information limited to technical information in these agreements, or does "
    "it also cover business and other information?",
    "nda-1": "Must confidential information be marked or identified as confidential by the disclosing "
    "party to be protected?",
    "nda-19": "Which obligations survive the termination or expiration of these agreements?",
    "nda-12": "May the receiving party independently develop information similar to the confidential "
    "information?",
    "nda-20": "May the receiving party keep copies of confidential information after returning or "
    "destroying it, for example for legal or archival purposes?",
    "nda-3": "Does confidential information under these agreements include information disclosed orally?",
    "nda-18": "Do these agreements prohibit soliciting or hiring the other party's employees?",
    "nda-7": "May the receiving party share confidential information with third parties such as "
    "consultants, agents or professional advisers?",
    "nda-17": "May the receiving party make copies of the confidential information?",
    "nda-8": "Must the receiving party notify the disclosing party if it is required by law or a court "
    "to disclose confidential information?",
    "nda-13": "May the receiving party acquire similar information from a third party without restriction?",
    "nda-5": "May the receiving party share confidential information with its employees?",
    "nda-4": "Do the agreements restrict the use of confidential information to the stated purpose?",
}

# CUAD clause category -> the question a user would ask of a room of contracts.
CUAD_QUESTIONS = {
    "Governing Law": "Which of these contracts say which state's or country's law governs them?",
    "Cap On Liability": "Which contracts cap or limit a party's liability, and to what amount?",
    "Insurance": "Which contracts require a party to maintain insurance?",
    "Change Of Control": "Which contracts give a party rights if the other party goes through a change "
    "of control, merger or acquisition?",
    "Non-Compete": "Which contracts restrict a party from competing with the other party?",
    "Audit Rights": "Which contracts give a party the right to audit or inspect the other party's books "
    "and records?",
    "Termination For Convenience": "Which contracts let a party terminate without cause, for convenience?",
    "Exclusivity": "Which contracts grant exclusive rights or require a party to deal exclusively?",
    "Anti-Assignment": "Which contracts require consent before a party may assign the agreement?",
    "License Grant": "Which contracts grant a licence, and to what?",
    "Minimum Commitment": "Which contracts require a minimum purchase, order or payment commitment?",
    "Renewal Term": "Which contracts renew automatically, and for how long?",
    "Post-Termination Services": "Which contracts require a party to keep providing services or support "
    "after the contract ends?",
    "Ip Ownership Assignment": "Which contracts assign ownership of intellectual property to a party?",
    "Revenue/Profit Sharing": "Which contracts share revenue or profits between the parties?",
    "Warranty Duration": "How long do the warranties in these contracts last?",
}
# Held-out categories, asked of the same rooms to see whether the engine carries to clauses its
# offline judge was never measured on: written in plain words once, before any run asked them,
# and never tuned to the engine (`bench/quality.py --datasets cuad-held-out`). Rarer clauses
# than the bench's: each question asked has 3 to 13 answering contracts of its room's 40.
CUAD_HELD_OUT_QUESTIONS = {
    "Most Favored Nation": "Which contracts give a party most favored nation pricing or terms?",
    "No-Solicit Of Employees": "Which contracts forbid soliciting or hiring the other party's employees?",
    "No-Solicit Of Customers": "Which contracts restrict a party from soliciting the other party's "
    "customers?",
    "Non-Disparagement": "Which contracts forbid a party from disparaging the other?",
    "Rofr/Rofo/Rofn": "Which contracts give a party a right of first refusal, first offer or first "
    "negotiation?",
    "Liquidated Damages": "Which contracts set liquidated damages or a termination fee?",
    "Uncapped Liability": "Which contracts leave some liability uncapped, excluded from the limitation of "
    "liability?",
    "Third Party Beneficiary": "Which contracts name third-party beneficiaries?",
    "Source Code Escrow": "Which contracts require source code to be put in escrow?",
    "Irrevocable Or Perpetual License": "Which contracts grant an irrevocable or perpetual licence?",
    "Non-Transferable License": "Which contracts grant a licence that cannot be transferred or sublicensed?",
    "Notice Period To Terminate Renewal": "How much notice must a party give to stop these contracts from "
    "renewing?",
    "Covenant Not To Sue": "Which contracts contain a covenant not to sue or not to challenge the other "
    "party's intellectual property?",
    "Price Restrictions": "Which contracts restrict a party's ability to raise prices?",
    "Volume Restriction": "Which contracts limit the volume or quantity a party may buy, sell or use?",
    "Joint Ip Ownership": "Which contracts give the parties joint ownership of intellectual property?",
}
CUAD_QUESTIONS_PER_ROOM = 6
CUAD_MIN_GOLD_PER_QUESTION = 3


@dataclass
class Question:
    key: str
    text: str
    # gold: document source name -> evidence excerpts (normalised) or character spans
    gold: dict[str, list] = field(default_factory=dict)
    # asked in the negative ("Which contracts do not ...?"): gold is then the documents without
    # the clause, answered by the report's list of them rather than its citations
    negated: bool = False


@dataclass
class Dataset:
    # the corpus's name (rooms asked two question sets share their corpora)
    name: str
    # source name -> text (ingested as <source name>)
    documents: dict[str, str]
    questions: list[Question]
    # the JSON line its questions are summed into
    group: str


# "Which contracts ...?" and "Do these agreements ...?" asked as a request ("List the contracts
# that ...").
_AS_REQUEST = re.compile(r"^(?:Which(?: of these)?|(?:Do|Does) (?:these|the)) (contracts|agreements) (.*)\?$")


# "Which contracts require ...?" asked in the negative: "Which contracts do not require ...?".
_AS_NEGATED = re.compile(r"^(Which(?: of these)? (?:contracts|agreements)) (?!do\b|are\b|have\b)(.*)\?$")


def as_negated(text: str) -> str | None:
    """ "Which contracts require a party to maintain insurance?" -> "Which contracts do not
    require a party to maintain insurance?"; None for a question of another shape."""
    match = _AS_NEGATED.match(text)
    return f"{match[1]} do not {match[2]}?" if match else None


def as_request(text: str) -> str:
    """The question as a user might put it as a request: "Which contracts require a party to
    maintain insurance?" -> "List the contracts that require a party to maintain insurance."
    Questions of other shapes are asked as they are."""
    match = _AS_REQUEST.match(text)
    return f"List the {match[1]} that {match[2]}." if match else text


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def contractnli(*, request_phrasing: bool = False) -> Dataset:
    data = json.loads((DATA / "contractnli" / "dev.json").read_text(encoding="utf-8"))
    documents: dict[str, str] = {}
    ask = as_request if request_phrasing else str
    questions = {key: Question(key, ask(text)) for key, text in CONTRACTNLI_QUESTIONS.items()}
    for doc in data["documents"]:
        name = f"nda-{doc['id']:03d}.txt"
        documents[name] = doc["text"]
        annotations = doc["annotation_sets"][0]["annotations"]
        for key, question in questions.items():
            annotation = annotations[key]
            if annotation["choice"] in ("Entailment", "Contradiction"):
                question.gold[name] = [
                    normalise(doc["text"][slice(*doc["spans"][i])]) for i in annotation["spans"]
                ]
    group = "contractnli" + ("-request" if request_phrasing else "")
    return Dataset("contractnli-dev", documents, list(questions.values()), group)


def _file_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", re.sub(r"\.(pdf|txt)$", "", name.strip().lower()))


def cuad_rooms(
    *,
    rooms: int = 5,
    size: int = 40,
    seed: int = 15,
    held_out: bool = False,
    clause_phrasing: bool = False,
    request_phrasing: bool = False,
    negated_phrasing: bool = False,
) -> list[Dataset]:
    """Seeded, disjoint rooms of `size` contracts; each asks CUAD_QUESTIONS_PER_ROOM of the
    categories (CUAD_QUESTIONS, or CUAD_HELD_OUT_QUESTIONS) that have at least
    CUAD_MIN_GOLD_PER_QUESTION contracts in the room. The rooms are the same either way.
    `clause_phrasing` asks the same categories as users often do, naming the clause ("Which
    contracts have a non-compete clause?"), its lines grouped apart ("…-clause");
    `request_phrasing` asks them as requests (as_request: "List the contracts that ..."),
    "…-request"; `negated_phrasing` asks the same sampled questions in the negative (as_negated:
    "Which contracts do not ...?", those of another shape left out), gold being the room's
    contracts without the clause, "…-negated"."""
    asked = CUAD_HELD_OUT_QUESTIONS if held_out else CUAD_QUESTIONS
    if clause_phrasing:
        asked = {category: f"Which contracts have a {category.lower()} clause?" for category in asked}
    if request_phrasing:
        asked = {category: as_request(text) for category, text in asked.items()}
    folder = DATA / "cuad" / "contracts"
    files = {_file_key(p.name): p for p in sorted(folder.glob("*.txt"))}
    csv.field_size_limit(1 << 30)
    gold: dict[str, dict[str, list[str]]] = {}
    with (DATA / "cuad" / "master_clauses.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = _file_key(row["Filename"])
            if key not in files:
                continue
            gold[key] = {}
            for category in asked:
                excerpts = [normalise(e) for e in ast.literal_eval(row[category] or "[]") if normalise(e)]
                if excerpts:
                    gold[key][category] = excerpts
    keys = sorted(gold)
    rng = random.Random(seed)
    rng.shuffle(keys)
    datasets = []
    for room in range(rooms):
        chosen = keys[room * size : (room + 1) * size]
        documents = {files[k].name: files[k].read_text(encoding="utf-8", errors="replace") for k in chosen}
        candidates = [
            Question(
                category, text, {files[k].name: gold[k][category] for k in chosen if category in gold[k]}
            )
            for category, text in asked.items()
        ]
        candidates = [q for q in candidates if len(q.gold) >= CUAD_MIN_GOLD_PER_QUESTION]
        questions = rng.sample(candidates, min(CUAD_QUESTIONS_PER_ROOM, len(candidates)))
        if negated_phrasing:
            questions = [
                Question(q.key, negated, {name: [] for name in documents if name not in q.gold}, negated=True)
                for q in questions
                if (negated := as_negated(q.text))
            ]
        datasets.append(
            Dataset(
                f"cuad-room-{room + 1}",
                documents,
                sorted(questions, key=lambda q: q.key),
                ("cuad-rooms-held-out" if held_out else "cuad-rooms")
                + ("-clause" if clause_phrasing else "")
                + ("-request" if request_phrasing else "")
                + ("-negated" if negated_phrasing else ""),
            )
        )
    return datasets
