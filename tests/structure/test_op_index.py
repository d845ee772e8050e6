"""OPS.md is what scripts/op_index.py writes from the code as it is now."""
from scripts.op_index import OUTPUT, render


def test_ops_md_is_current():
    committed = (OUTPUT.read_text() if OUTPUT.exists() else "").splitlines()
    wanted = render().splitlines()
    stale = next((f"line {i + 1}: {old!r} should be {new!r}"
                  for i, (old, new) in enumerate(zip(committed, wanted)) if old != new),
                 f"{len(committed)} lines, should be {len(wanted)}")
    assert committed == wanted, f"OPS.md is out of date ({stale[:300]}): run `python scripts/op_index.py`"
