"""Whether research.engine.versions takes any two bench documents for versions of one document:
every pair of titles (and each document's text naming another's title after "supersedes" or
"replaces", its lines standing for its passages) in the ContractNLI corpus, in each CUAD room
(held-out ones too), and across all CUAD contracts, titled as ingestion titles them (the file
name's stem). They are distinct contracts, so every pair found is a false one unless it reads as
a true version. Prints JSON. Reads ../shared/data (never copied into the repo).

    .venv/bin/python bench/versions_check.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_data import DATA, contractnli, cuad_rooms
from research.engine.versions import SUPERSEDING_PHRASES, document_versions


def _check(name: str, documents: dict[str, str]) -> dict:
    titles = {i: Path(source).stem for i, source in enumerate(sorted(documents))}
    texts = {
        i: [p for p in documents[source].split("\n") if any(v in p.lower() for v in SUPERSEDING_PHRASES)]
        for i, source in enumerate(sorted(documents))
    }
    found = document_versions(titles, texts)
    return {
        "corpus": name,
        "documents": len(titles),
        "pairs": len(titles) * (len(titles) - 1) // 2,
        "superseded": [[titles[s.current], titles[s.older], s.by] for s in found.superseded],
        "unordered": [[titles[a], titles[b]] for a, b in found.unordered],
    }


def main() -> None:
    results = [_check("contractnli-dev", contractnli().documents)]
    rooms = [*cuad_rooms(), *cuad_rooms(held_out=True)]
    results += [_check(f"{room.group}/{room.name}", room.documents) for room in rooms]
    every = {
        p.name: p.read_text(encoding="utf-8", errors="replace")
        for p in sorted((DATA / "cuad" / "contracts").glob("*.txt"))
    }
    results.append(_check("cuad-all-contracts", every))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
