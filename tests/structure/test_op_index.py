"""OPS.md is what scripts/op_index.py writes from the code as it is now."""
from scripts.op_index import OUTPUT, render


def test_ops_md_is_current():
    committed = (OUTPUT.read_text() if OUTPUT.exists() else "").splitlines()
    wanted = render().splitlines()
    stale = next((f"line {i + 1}: {old!r} should be {new!r}"
                  for i, (old, new) in enumerate(zip(committed, wanted)) if old != new),
                 f"{len(committed)} lines, should be {len(wanted)}")
    assert committed == wanted, f"OPS.md is out of date ({stale[:300]}): run `python scripts/op_index.py`"


def test_each_lowering_row_names_its_own_function_and_layers():
    """Not the registration wrapper every lowering goes through (the index once pointed all 120
    ops at lowering/__init__.py and listed no layer for any). Read from the committed OPS.md, which
    the test above holds equal to render() (rendering takes seconds: once is enough)."""
    rows = [line.split(" | ") for line in OUTPUT.read_text().splitlines() if line.startswith("| ") and ".py:" in line]
    lowering_rows = [r for r in rows if r[1].startswith("converter/lowering/")]
    assert len(lowering_rows) > 100
    assert not [r[0] for r in lowering_rows if r[1].startswith("converter/lowering/__init__.py")]
    assert sum(r[2] != "—" for r in lowering_rows) > 100
