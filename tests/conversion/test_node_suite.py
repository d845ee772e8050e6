"""Every onnx backend node test case in scope (scripts/node_suite.py says which and why) is either
refused in one line or computes its expected numbers in the real ncnn runtime, and the interpreter
agrees with real ncnn. The allowed differences are ones the conversion warned about (ncnn's pow of
bases <= 0, its division before a rounding). Cases run in parallel children (about 20 s of CPU, in 2
children on 2 cores)."""
import pytest

from scripts.node_suite import BAD, collect, run_suite, summary

MIN_PASSING = 590          # 596 when written: a drop means cases stopped converting


@pytest.fixture(scope="module")
def suite():
    cases, skipped = collect()
    results = run_suite(cases)
    print(summary(results, skipped))
    return results, skipped


def test_no_case_converts_to_other_numbers(suite, record_property):
    results, skipped = suite
    record_property("node_suite", summary(results, skipped))
    bad = [f"{r.outcome} {r.name}: {r.detail}" for r in results if r.outcome in BAD]
    assert not bad, f"{summary(results, skipped)}\n" + "\n".join(bad)


# the allowed differences, each with the warning the conversion gave for it
WARNED = {"test_pow": "BinaryOp pow is wrong for bases <= 0",      # 0 ** -0.98 is inf in ONNX, 2.4e38 in ncnn
          # dynamic quantization divides by a run-time scale: its inputs sit on .5 ties, where ncnn's
          # division (1 ulp off) rounds a step away; the conversion reports the node approximate and why
          "test_dynamicquantizelinear": "not correctly rounded on x86"}


def test_differences_only_where_the_conversion_warned(suite):
    warned = [r for r in suite[0] if r.outcome == "warned"]
    assert all(WARNED.get(r.name, "\0") in r.detail for r in warned), warned
    assert sorted(r.name for r in warned) == sorted(WARNED)


def test_the_suite_is_not_vacuous(suite):
    results, skipped = suite
    assert sum(r.outcome == "pass" for r in results) >= MIN_PASSING, summary(results, skipped)
    assert "test_spacetodepth_crd_mode_example" in {r.name for r in results if r.outcome == "pass"}
