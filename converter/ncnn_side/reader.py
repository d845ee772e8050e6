"""Read an ncnn .param/.bin pair into the ncnn Graph the converter itself produces.

The .param text is checked the way ncnn's Net::load_param and ParamDict read
it, but stricter: anything the real runtime would misread or silently ignore
(wrong counts, a blob used before it exists, a float written for an int
param, a value longer than the 15 characters ncnn scans) is an error, never a
guess. Param values are converted to the kinds in ncnn_layers.SPECS. The .bin
is walked in layer order with each spec's weight layout.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.layers import FLOAT, FLOATS, FP16_FLAG, INT, INT8_FLAG, INTS, SPECS, STR

FP32_SCALED_FLAG = 0x0002C056   # src/modelbin.cpp: plain float32 data under another tag

MAGIC = "7767517"
MAX_PARAM_ID = 31          # ncnn keeps 32 params per layer (NCNN_MAX_PARAM_COUNT)
ARRAY_KEY_BASE = -23300    # key -23300 - id: a counted array for param `id`
MAX_NUMBER_CHARS = 15      # ncnn scans a number (or array element) into 15 chars
MAX_NAME_CHARS = 255       # ncnn scans type/layer/blob names with %255s
MAX_STRING_CHARS = 255

# A param token: `id="quoted string"` (may hold spaces) or any run of non-space.
_TOKEN = re.compile(r'-?\d+="[^"\n]*"(?=\s|$)|\S+')
_PARAM = re.compile(r"(-?\d+)=(.*)\Z", re.S)
_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_COUNT = re.compile(r"[0-9]+\Z")


class NcnnFormatError(ValueError):
    """A .param/.bin that cannot be read exactly; the message is one line naming the file and place."""


@dataclass
class LayerRecord:
    type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    params: dict[int, Any] = field(default_factory=dict)   # by id, converted to the spec's kinds
    line: int = 0                                          # 1-based line in the .param text


# ---- param values ----------------------------------------------------------

def _is_float_text(text: str) -> bool:
    return "." in text or "e" in text.lower()


def _is_string_text(text: str) -> bool:
    return text[:1].isalpha() or text.startswith('"')


def _number(text: str) -> int | float:
    """One scalar as ncnn classifies it: float iff it has '.' or 'e'."""
    if not text:
        raise ValueError("empty value")
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"value {text!r} is longer than the {MAX_NUMBER_CHARS} characters ncnn reads")
    if _is_float_text(text):
        if not _FLOAT.match(text):
            raise ValueError(f"{text!r} is not a number")
        with np.errstate(over="ignore"):
            return float(np.float32(float(text)))   # the float32 ncnn will use
    if not _INT.match(text):
        raise ValueError(f"{text!r} is not a number")
    value = int(text)
    if not -2**31 <= value < 2**31:
        raise ValueError(f"{text!r} does not fit a 32-bit int")
    return value


def _string(text: str) -> str:
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"'):
            raise ValueError(f"unterminated string {text!r}")
        text = text[1:-1]
    if len(text) > MAX_STRING_CHARS:
        raise ValueError(f"string is longer than the {MAX_STRING_CHARS} characters ncnn reads")
    return text


def _array(text: str, counted: bool) -> tuple:
    parts = text.split(",")
    if counted:
        count = _number(parts[0])
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"array length {parts[0]!r} is not a count")
        parts = parts[1:]
        if len(parts) != count:
            raise ValueError(f"array declares {count} elements but has {len(parts)}")
    values = tuple(_number(p) for p in parts)
    kinds = {type(v) for v in values}
    # ncnn stores an array with one element type: a counted array takes it from the
    # last element, a plain one from the first; either way a mix is misread.
    if len(kinds) > 1 and (counted or isinstance(values[0], int)):
        raise ValueError("array mixes int and float elements (ncnn reads them with one type)")
    if kinds == {int, float}:
        values = tuple(float(v) for v in values)
    return values


def _parse_value(key: int, text: str) -> tuple[int, Any]:
    """(param id, value as written: int, float, str or tuple) for one `key=text` token."""
    counted = key <= ARRAY_KEY_BASE
    pid = ARRAY_KEY_BASE - key if counted else key
    if not 0 <= pid <= MAX_PARAM_ID:
        raise ValueError(f"param id {pid} is outside ncnn's 0..{MAX_PARAM_ID}")
    if counted:
        return pid, _array(text, counted=True)
    if _is_string_text(text):
        return pid, _string(text)
    if "," in text:
        return pid, _array(text, counted=False)
    return pid, _number(text)


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return "an array of " + ("floats" if any(isinstance(v, float) for v in value) else "ints")
    return {int: "an int", float: "a float", str: "a string"}[type(value)]


def _convert(value: Any, kind: str, pid: int) -> Any:
    """The value in the spec's kind; ints widen to floats as the runtime does, nothing narrows."""
    ok = {
        INT: isinstance(value, int),
        FLOAT: isinstance(value, (int, float)),
        INTS: isinstance(value, tuple) and all(isinstance(v, int) for v in value),
        FLOATS: isinstance(value, tuple),
        STR: isinstance(value, str),
    }[kind]
    if not ok:
        raise ValueError(f"param {pid} must be {kind}, got {_describe(value)} ({value!r})")
    if kind == FLOAT:
        return float(value)
    if kind == FLOATS:
        return tuple(float(v) for v in value)
    return value


# ---- .param ---------------------------------------------------------------

# Layer types ncnn names but its builds leave out: no runtime could run such a file.
NOT_CREATABLE = {"ArgMax": "ncnn_add_layer(ArgMax OFF) in src/CMakeLists.txt; the pip runtime "
                           "reports 'layer ArgMax not exists or registered'"}

def _parse_layer(tokens: list[str], fail) -> LayerRecord:
    """One layer line's fields; `fail(message)` makes the error to raise."""
    if len(tokens) < 4:
        raise fail("a layer line needs: type name input_count output_count blobs... params...")
    type_, name, n_in, n_out = tokens[:4]
    for what, text in (("layer type", type_), ("layer name", name)):
        if len(text) > MAX_NAME_CHARS:
            raise fail(f"{what} is longer than {MAX_NAME_CHARS} characters")
    if type_ in NOT_CREATABLE:
        raise fail(f"layer {name!r}: the real ncnn runtime cannot create layer type {type_} "
                   f"({NOT_CREATABLE[type_]})")
    if type_ not in SPECS:
        raise fail(f"unknown layer type {type_!r} (layer {name!r})")
    if not (_COUNT.match(n_in) and _COUNT.match(n_out)):
        raise fail(f"layer {name!r}: input/output counts {n_in!r} {n_out!r} are not counts")
    n_in, n_out = int(n_in), int(n_out)
    rest = tokens[4:]
    n_names = next((i for i, t in enumerate(rest) if _PARAM.match(t)), len(rest))
    if n_names != n_in + n_out:
        raise fail(f"layer {name!r} declares {n_in} inputs and {n_out} outputs but names {n_names} blobs")
    blobs = rest[:n_names]
    for blob in blobs:
        if len(blob) > MAX_NAME_CHARS:
            raise fail(f"layer {name!r}: blob name is longer than {MAX_NAME_CHARS} characters")
    spec = SPECS[type_]
    params: dict[int, Any] = {}
    for token in rest[n_names:]:
        match = _PARAM.match(token)
        if match is None:
            raise fail(f"layer {name!r}: expected id=value, got {token!r}")
        try:
            pid, value = _parse_value(int(match[1]), match[2])
            if pid in params:
                raise ValueError(f"param {pid} is given twice")
            known = spec.by_id.get(pid)
            params[pid] = value if known is None else _convert(value, known.kind, pid)
        except ValueError as exc:
            raise fail(f"layer {name!r} ({type_}): bad param {token!r}: {exc}") from None
    return LayerRecord(type_, name, blobs[:n_in], blobs[n_in:], params)


def parse_param(text: str, source: str = "<param>") -> list[LayerRecord]:
    """Parse and check .param text; `source` names it in error messages."""
    lines = [(i, line.strip()) for i, line in enumerate(text.split("\n"), 1)]
    lines = [(i, line) for i, line in lines if line]

    def fail_at(lineno: int):
        return lambda message: NcnnFormatError(f"{source}:{lineno}: {message}")

    if not lines:
        raise NcnnFormatError(f"{source}: empty file, expected the magic number {MAGIC}")
    lineno, magic = lines[0]
    if magic != MAGIC:
        raise fail_at(lineno)(f"bad magic {magic[:20]!r}, expected {MAGIC} (an ncnn text .param)")
    if len(lines) < 2:
        raise fail_at(lineno)("missing the 'layer_count blob_count' line")
    counts_line, counts = lines[1]
    fields = counts.split()
    if len(fields) != 2 or not all(_COUNT.match(f) for f in fields):
        raise fail_at(counts_line)(f"expected 'layer_count blob_count', got {counts!r}")
    layer_count, blob_count = map(int, fields)
    if layer_count == 0 or blob_count == 0:
        raise fail_at(counts_line)("layer and blob counts must be positive (ncnn rejects an empty model)")

    records: list[LayerRecord] = []
    produced: set[str] = set()
    for lineno, line in lines[2:]:
        fail = fail_at(lineno)
        record = _parse_layer(_TOKEN.findall(line), fail)
        record.line = lineno
        for blob in record.inputs:
            if blob not in produced:
                raise fail(f"layer {record.name!r} uses blob {blob!r} before any layer produces it")
        for blob in record.outputs:
            if blob in produced:
                raise fail(f"layer {record.name!r} produces blob {blob!r} that is already produced")
            produced.add(blob)
        records.append(record)

    if (layer_count, blob_count) != (len(records), len(produced)):
        raise fail_at(counts_line)(f"counts say {layer_count} layers and {blob_count} blobs, "
                             f"the file has {len(records)} layers and {len(produced)} blobs")
    return records


# ---- .bin -----------------------------------------------------------------

def _read_weights(records: list[LayerRecord], data: bytes, bin_source: str,
                  param_source: str) -> list[list[np.ndarray]]:
    """Each layer's weights, flat float32, in .bin order; the whole buffer must be used."""
    offset = 0
    out: list[list[np.ndarray]] = []

    def take(nbytes: int, what: str, record: LayerRecord) -> bytes:
        nonlocal offset
        if offset + nbytes > len(data):
            missing = offset + nbytes - len(data)
            raise NcnnFormatError(
                f"{bin_source}: truncated: layer {record.name!r} ({record.type}, {param_source}:"
                f"{record.line}) needs {nbytes} bytes for {what} at offset {offset}, "
                f"{missing} bytes missing")
        chunk = data[offset:offset + nbytes]
        offset += nbytes
        return chunk

    for record in records:
        spec = SPECS[record.type]
        try:
            layout = spec.weight_layout(record.params)
            resolved = spec.resolve(record.params)
            counts = [w.count(resolved) for w in layout]
        except (KeyError, TypeError, ValueError) as exc:
            raise NcnnFormatError(f"{param_source}:{record.line}: layer {record.name!r}: "
                                  f"params do not define its weights ({exc!r})") from None
        weights = []
        for w, count in zip(layout, counts):
            if count < 0:
                raise NcnnFormatError(f"{param_source}:{record.line}: layer {record.name!r}: "
                                      f"weight {w.name} has a negative size {count}")
            what = f"weight {w.name!r} ({count} values)"
            dtype = w.raw
            if w.tagged(resolved):
                tag = int.from_bytes(take(4, f"the type tag of {what}", record), "little")
                if tag == FP16_FLAG:
                    dtype = "<f2"
                elif tag == INT8_FLAG:
                    dtype = "i1"
                elif tag not in (0, FP32_SCALED_FLAG):
                    # ncnn would read any other non-zero tag as a 256-entry quantization table; in
                    # practice it is a .bin written for another .param, or one cut short
                    raise NcnnFormatError(
                        f"{bin_source}: 0x{tag:08X} at offset {offset - 4} is not the float32/float16/int8 "
                        f"type tag layer {record.name!r} ({record.type}, {param_source}:{record.line}) "
                        f"needs: the .bin does not match the .param (mismatched or truncated .bin; "
                        f"table-quantized weights are not supported)")
            nbytes = count * np.dtype(dtype).itemsize
            raw = take(nbytes, what, record)
            take(-nbytes % 4, f"the padding after {what}", record)
            # int8 weights keep their type: the writer stores them int8 again
            weights.append(np.frombuffer(raw, dtype=dtype).astype(np.int8 if dtype == "i1" else np.float32))
        out.append(weights)

    if offset != len(data):
        raise NcnnFormatError(f"{bin_source}: {len(data) - offset} unused bytes after the last "
                              f"weight (offset {offset}); the .bin does not match {param_source}")
    return out


# ---- files ----------------------------------------------------------------

def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NcnnFormatError(f"{path}: {what} file not found") from None
    except OSError as exc:
        raise NcnnFormatError(f"{path}: cannot read {what} file: {exc.strerror}") from None


def read_param(param_path: str | Path) -> list[LayerRecord]:
    path = Path(param_path)
    raw = _read_bytes(path, ".param")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NcnnFormatError(f"{path}: not a text .param file (byte {exc.start} is not UTF-8; "
                              f"binary .param.bin is not supported)") from None
    return parse_param(text, str(path))


def _unique_layer_names(records: list[LayerRecord]) -> list[str]:
    """Layer names for the Graph, which keys nodes by name. ncnn never checks layer names
    (blobs bind layers) and pnnx repeats `splitncnn_0`: a repeat gets `@<line>` appended."""
    taken = {r.name for r in records}
    seen: set[str] = set()
    names = []
    for record in records:
        name = record.name
        if name in seen:
            name = f"{record.name}@{record.line}"
            while name in taken:
                name += "_"
            taken.add(name)
        seen.add(name)
        names.append(name)
    return names


def build_graph(records: list[LayerRecord], weights: list[list[np.ndarray]],
                name: str = "graph") -> Graph:
    """The ncnn Graph for checked records: blobs of unknown shape, inputs from Input layers,
    outputs = blobs no layer consumes."""
    graph = Graph(name)
    consumed = {blob for r in records for blob in r.inputs}
    for record, layer_weights, layer_name in zip(records, weights, _unique_layer_names(records)):
        for blob in record.outputs:
            graph.add_tensor(Tensor(blob, shape=None))
        graph.add_node(Node(layer_name, record.type, list(record.inputs), list(record.outputs),
                            params=dict(record.params), weights=layer_weights, ncnn=True))
        if record.type == "Input":
            graph.inputs.extend(record.outputs)
        graph.outputs.extend(b for b in record.outputs if b not in consumed)
    return graph


def read_ncnn(param_path: str | Path, bin_path: str | Path) -> Graph:
    """Read an ncnn model (text .param + .bin) into an ncnn Graph; NcnnFormatError if malformed."""
    records = read_param(param_path)
    data = _read_bytes(Path(bin_path), ".bin")
    weights = _read_weights(records, data, str(bin_path), str(param_path))
    return build_graph(records, weights, Path(param_path).stem)
