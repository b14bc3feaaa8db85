"""The byte-bounded LRU that holds each process's in-memory indexes."""

from corpora.retrieval.lru import ByteBoundedLRU


def test_the_least_recently_used_go_first_once_the_bytes_run_over():
    cache = ByteBoundedLRU(max_bytes=10, size=len)
    cache.put("a", "xxxx")
    cache.put("b", "yyyy")
    assert cache.get("a") == "xxxx"  # a is now the most recently used

    cache.put("c", "zzzz")  # 12 bytes: b, the least recently used, goes

    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c")) == ("xxxx", "zzzz")


def test_the_newest_entry_stays_however_large_and_replacing_a_key_keeps_one_entry():
    cache = ByteBoundedLRU(max_bytes=10, size=len)
    cache.put("a", "x")
    cache.put("big", "y" * 50)

    assert cache.get("a") is None
    assert cache.get("big") == "y" * 50

    cache.put("big", "z")
    cache.put("a", "x")
    assert (cache.get("big"), cache.get("a")) == ("z", "x")
    cache.clear()
    assert cache.get("big") is None
