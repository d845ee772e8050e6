"""A seeded mutation fuzz of the command line (scripts/fuzz.py): no case may end in a traceback, a
multi-line error, the last-guard "internal error", a signal, a timeout or stray files."""
import sys

from onnx_cases import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import fuzz  # noqa: E402

BAD = ["traceback", "multi-line error", "internal error", "signal", "timeout", "files left in -o",
       "files outside -o"]


def test_seeded_corpus_ends_cleanly():
    examples: dict = {}
    counts = fuzz.fuzz(seed=20261123, count=300, time_limit=60, workers=2, examples=examples)
    assert sum(counts[o] for o in ("exit 0", "exit 1", "clean exit 2")) == 300, dict(counts)
    assert counts["clean exit 2"] > 100 and counts["exit 0"] > 10     # the corpus exercises both paths
    assert not any(counts[o] for o in BAD), {o: examples.get(o) for o in BAD if counts[o]}
