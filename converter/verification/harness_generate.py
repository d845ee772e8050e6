"""The `--generate N` mode of `<stem>_ncnn.py` for a decoder step (converter/generation.py's loop,
written out so that the script needs numpy and ncnn only): prefill a prompt, decode N tokens
greedily carrying present -> past between calls; with --check, onnxruntime runs the same loop on
the .onnx (from a true empty past) and tokens and logits are compared step by step. The first call
(an empty past: ncnn holds no empty Mat) runs the prompt file convert writes beside a decoder step
(generation.wants_prompt_file) or a merged decoder's prefill file; a step without either (an
encoder-decoder's decoder_with_past: its first call is the export's decoder without a past) gets no
--generate."""
from __future__ import annotations

from converter.generation import decoder_io

GENERATE = '''

# ---- decoder step: greedy generation (python {script} --generate N [--prompt 1,2,3] [--check] [--ncnn-python PATH]) ----
CACHES = {caches!r}   # past input -> (ONNX shape, the axis that grows)
PRESENT = {pairs!r}   # present output -> the past input it becomes in the next call
OTHERS = {others!r}   # other inputs: the same value at every call (fed from NAME=FILE.npy)
# ncnn cannot hold an empty Mat: the first call (an empty past) goes to this prompt file, the same model
# with the past removed, on the same .bin (None: a merged decoder's pair, below)
PROMPT_PARAM = {prompt!r}
# or a merged decoder's pair: the first call runs the prefill file's script, and onnxruntime's merged
# file gets the branch input False then, True after (as optimum feeds it)
PAIR = {pair!r}
# --check: logits within this fraction of their largest at every step ({why})
LOGITS_RTOL = {rtol!r}


def generate(run, prompt, steps, fixed):
    """Greedy tokens and each step's last logits from an empty past; `run` maps ONNX-named feeds to outputs."""
    past = {{n: np.zeros([0 if i == axis else (1 if d is None else d) for i, d in enumerate(shape)],
                        np.float32) for n, (shape, axis) in CACHES.items()}}
    names = {{e["onnx"] for e in INPUTS}}
    mask, position, ids, tokens, logits = [], 0, list(prompt), [], []
    for _ in range(steps):
        mask += [1] * len(ids)
        feeds = {{"input_ids": np.array([ids], np.int64), **past, **fixed}}
        if "attention_mask" in names:
            feeds["attention_mask"] = np.array([mask], np.int64)
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(position, position + len(ids), dtype=np.int64)[None]
        out = run(feeds)
        last = np.asarray(out["logits"], np.float32).reshape(-1, out["logits"].shape[-1])[-1]
        logits.append(last)
        tokens.append(int(np.argmax(last)))
        past = {{PRESENT[p]: np.asarray(out[p], np.float32) for p in PRESENT}}
        position += len(ids)
        ids = [tokens[-1]]
    return tokens, logits


def empty_past(feeds):
    return any(np.shape(feeds[n])[axis] == 0 for n, (_, axis) in CACHES.items() if n in feeds)


def generate_main(argv, steps):
    prompt = [1, 2, 3]
    if "--prompt" in argv:
        at = argv.index("--prompt")
        prompt, argv = [int(t) for t in argv[at + 1].split(",")], argv[:at] + argv[at + 2:]
    argv, ncnn_python = _option(argv, "--ncnn-python")
    argv, save_path = _option(argv, "--save-generation")
    argv, check_wanted, onnx_path = check_options(argv)
    fixed = {{name: np.load(path) for name, _, path in (a.partition("=") for a in argv)}}
    missing = [n for n in OTHERS if n not in fixed]
    if missing:
        sys.exit(f"inputs {{', '.join(missing)}} need values: NAME=FILE.npy")
    if ncnn_python is not None:
        tokens, logits = generate_in_python(ncnn_python, prompt, steps, argv)
    else:
        tokens, logits = generate_here(prompt, steps, fixed)
    if save_path is not None:       # what generate_in_python asks of this script in another Python
        np.savez(save_path, tokens=np.array(tokens), logits=np.array(logits))
        return
    print("tokens:", " ".join(map(str, tokens)))
    if not check_wanted:
        return
    import onnxruntime
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    wanted = {{i.name for i in session.get_inputs()}}
    fixed_onnx = {{name: np.asarray(value, dtype) for name, (value, dtype) in FIXED.items()}}

    def run(feeds):
        if PAIR:
            fixed_onnx[PAIR["branch_input"]] = np.array([not empty_past(feeds)])
        return dict(zip(names, session.run(names, {{**{{k: v for k, v in feeds.items() if k in wanted}}, **fixed_onnx}})))
    ref_tokens, ref_logits = generate(run, prompt, steps, fixed)
    passed, parted = True, None
    for k, (a, b) in enumerate(zip(ref_logits, logits)):
        error, scale = float(np.abs(a - b).max()), float(np.abs(a).max())
        close, best = error <= LOGITS_RTOL * scale, np.sort(a)[-2:]
        if ref_tokens[k] != tokens[k] and close and best[1] - best[0] <= 2 * LOGITS_RTOL * scale:
            # a near-tie the allowed deviation can flip: past it the two generations read other tokens
            parted = (k, float(best[1] - best[0]))
            break
        ok = ref_tokens[k] == tokens[k] and close
        passed &= ok
        if not ok:
            print(f"MISMATCH step {{k}}: token {{tokens[k]}}, onnxruntime {{ref_tokens[k]}}, "
                  f"max |dlogit| {{error:.3g}} of {{scale:.3g}}")
    if not passed:
        print("MISMATCH")
    elif parted:
        print(f"ok: logits within {{LOGITS_RTOL:g}} of the largest for {{parted[0] + 1}} steps, tokens equal to "
              f"onnxruntime's before step {{parted[0]}}, where its best two logits are {{parted[1]:.3g}} apart, within "
              f"twice that: the generations part there (not compared after it)")
    else:
        print(f"ok: {{len(tokens)}} tokens equal to onnxruntime's, logits within {{LOGITS_RTOL:g}} of the "
              f"largest at every step")
    sys.exit(0 if passed else 1)


def generate_here(prompt, steps, fixed):
    model = loaded(threads=1)
    if PAIR:
        import runpy
        first = runpy.run_path(str(HERE / PAIR["prefill_script"]))["loaded"](threads=1)
    else:
        first = prompt_model()

    def run(feeds):     # the call with an empty past goes to the file that takes no past
        if empty_past(feeds):
            return first.run({{k: v for k, v in feeds.items() if k not in CACHES}})
        return model.run(feeds)
    return generate(run, prompt, steps, fixed)


def generate_in_python(python, prompt, steps, fixed_args):
    """The generation in the ncnn `python` imports (--ncnn-python): this script in a child, the tokens
    and logits back through an .npz file; onnxruntime (for --check) stays in this Python."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "generation.npz"
        run_script_in(python, "--generate", str(steps), "--prompt", ",".join(map(str, prompt)),
                      "--save-generation", str(saved), *fixed_args)
        with np.load(saved) as out:
            return [int(t) for t in out["tokens"]], list(out["logits"])


def prompt_model():
    """The prompt file as a Model (its io from its .json record), or one line and exit 1 without it."""
    import json
    param = HERE / PROMPT_PARAM
    record = param.with_suffix(".json")
    if not (param.is_file() and record.is_file()):
        sys.exit(f"--generate: a generation starts from the prompt file {{PROMPT_PARAM}} (and its .json) "
                 f"that convert writes beside these files (ncnn holds no empty past): not found")
    io = json.loads(record.read_text(encoding="utf-8"))
    return Model(1, param, (io["inputs"], io["outputs"]))


_main = main


def main(argv):
    if "--generate" in argv:
        at = argv.index("--generate")
        try:
            steps = int(argv[at + 1])
        except (IndexError, ValueError):
            sys.exit("--generate needs a number of tokens")
        return generate_main(argv[:at] + argv[at + 2:], steps)
    if "--check" in argv and not any("=" in a for a in argv):
        # random inputs would not be a decoder's (the mask must be past + new tokens long): generate
        return generate_main(argv, 8)
    return _main(argv)
'''


INT8_GEMM_RTOL = 2e-2      # --block-quant int8 (converter/lowering/genai_matmulnbits.py: the stated deviation)


def generate_block(record: dict, script_name: str, int8_gemm: bool = False, prompt: str | None = None) -> str | None:
    """The script text that adds --generate, for a decoder step's io record; None for others.
    `int8_gemm`: the files quantize activations in int8 Gemms, and --check allows their deviation.
    `prompt`: the prompt file's name (generation.wants_prompt_file), or None."""
    try:
        io = decoder_io(record)
    except (ValueError, KeyError):
        return None
    pair = record.get("pair")
    if pair is None and prompt is None:     # no file takes the first call
        return None
    if pair is not None:        # the prefill file's script, named as verification/harness.py's script_path names it
        stem = pair["prefill"]["param"].removesuffix(".param").removesuffix(".ncnn")
        pair = {"prefill_script": f"{stem}_ncnn.py", "branch_input": pair["branch_input"]}
    why = ("int8 Gemm projections, --block-quant int8" if int8_gemm else "float32 arithmetic")
    return GENERATE.format(script=script_name, caches=io["caches"], pairs=io["pairs"], others=io["others"],
                           rtol=INT8_GEMM_RTOL if int8_gemm else 1e-4, why=why, prompt=prompt, pair=pair)
