"""bench/quality.py's question sets: the held-out CUAD categories ask the same rooms as the
bench's, about other clauses, each with enough answering contracts in its room."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# bench/ is scripts, not a package: the module is loaded from its file, not put on sys.path.
_spec = importlib.util.spec_from_file_location("quality_data", ROOT / "bench" / "quality_data.py")
quality_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quality_data)

pytestmark = pytest.mark.skipif(
    not (quality_data.DATA / "cuad" / "contracts").is_dir(),
    reason="../shared/data/cuad is not beside this checkout",
)


@pytest.fixture(scope="module")
def rooms():
    return quality_data.cuad_rooms(), quality_data.cuad_rooms(held_out=True)


def test_held_out_rooms_are_the_bench_rooms(rooms):
    bench, held_out = rooms

    assert [d.name for d in held_out] == [d.name for d in bench]
    assert [set(d.documents) for d in held_out] == [set(d.documents) for d in bench]
    assert {d.group for d in bench} == {"cuad-rooms"}
    assert {d.group for d in held_out} == {"cuad-rooms-held-out"}


def test_held_out_questions_are_other_categories_with_gold_in_their_room(rooms):
    _, held_out = rooms
    assert not set(quality_data.CUAD_HELD_OUT_QUESTIONS) & set(quality_data.CUAD_QUESTIONS)

    for room in held_out:
        assert len(room.questions) == quality_data.CUAD_QUESTIONS_PER_ROOM
        for question in room.questions:
            assert question.text == quality_data.CUAD_HELD_OUT_QUESTIONS[question.key]
            assert len(question.gold) >= quality_data.CUAD_MIN_GOLD_PER_QUESTION
            assert set(question.gold) <= set(room.documents)
            assert all(question.gold.values())


def test_an_unknown_dataset_is_refused_before_anything_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "quality.py"),
            "--datasets",
            "cuad,nope",
            "--database",
            str(tmp_path / "q.sqlite3"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert "unknown datasets: nope" in result.stderr
    assert not (tmp_path / "q.sqlite3").exists()


def test_clause_phrasing_asks_the_same_categories_of_the_same_rooms_naming_the_clause(rooms):
    bench, _ = rooms
    clause = quality_data.cuad_rooms(clause_phrasing=True)

    assert [set(d.documents) for d in clause] == [set(d.documents) for d in bench]
    assert [[(q.key, q.gold) for q in d.questions] for d in clause] == [
        [(q.key, q.gold) for q in d.questions] for d in bench
    ]
    assert {d.group for d in clause} == {"cuad-rooms-clause"}
    asked = {q.key: q.text for d in clause for q in d.questions}
    assert asked["Non-Compete"] == "Which contracts have a non-compete clause?"
