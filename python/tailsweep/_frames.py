"""How client.py turns the sources' rows into values and frames: typed
parameters, the protocol's number words, dotted columns, long point
frames; pandas imported only when a frame is asked for."""

import importlib
import json
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from tailsweep._database import Point
from tailsweep._numbers import WORDS, Json, number
from tailsweep.errors import InvalidArgument

_PARAM_PREFIX = "params_"


def _typed(text: str) -> Json:
    """A parameter's text as its type (a number or boolean when it is one;
    JSON lists too), as `tailsweep export` types grid values."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return text
    if isinstance(value, (bool, int, float, list)):
        return value
    return text


def _text(value: object) -> str:
    """A parameter as the job schema reads it: true/false, integers,
    floats in Python's shortest form, strings as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str):
        return value
    raise InvalidArgument("a cell's value is a string, number or boolean "
                          "(got %r)" % (value,))


def _number(value: Json) -> Json:
    """A result's number: JSON's, or the protocol's "nan", "inf", "-inf"."""
    return number(value)


def _flatten(prefix: str, value: Json, row: Dict[str, Json]) -> None:
    """Nested objects (a command job's summary, outcomes, child) become
    dotted columns: summary.loss.last."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(prefix + "." + key if prefix else key, inner, row)
    else:
        row[prefix] = _number(value)


class _Columns:
    """Rows (dicts) into columns, `None` where a row lacks one: column name
    -> values, in order of first appearance (faster to make a frame of than
    a dict per row). Rows with the keys of the row before (the common case:
    a sweep's results share their shape) are appended without a lookup."""

    def __init__(self, first: str) -> None:
        self.cols: Dict[str, List[Json]] = {first: []}
        self.n = 0
        self._keys: Tuple[str, ...] = ()
        self._lists: List[List[Json]] = []
        self._missing: List[List[Json]] = []

    def add(self, row: Dict[str, Json]) -> None:
        keys = tuple(row)
        if keys != self._keys:
            for k in keys:
                if k not in self.cols:
                    self.cols[k] = [None] * self.n
            self._keys = keys
            self._lists = [self.cols[k] for k in keys]
            present = set(keys)
            self._missing = [c for k, c in self.cols.items()
                             if k not in present]
        for column, value in zip(self._lists, row.values()):
            column.append(value)
        for column in self._missing:
            column.append(None)
        self.n += 1


class _ResultColumns(_Columns):
    """A sweep's results (Sweep.results()) into columns: per result, job_id,
    its config's keys as params_KEY (else its grid values, typed), then its
    fields, nested objects as dotted columns (config and samples left
    out), the protocol's number words as floats. A result shaped as the one
    before it (the same keys; no nested object but its config) goes
    straight into the columns: a sweep's results share their shape."""

    def __init__(self) -> None:
        super().__init__("job_id")
        self._shape: Optional[Tuple[Tuple[str, ...], Tuple[str, ...]]] = None
        self._config_lists: List[List[Json]] = []
        # Per field, its column; None for config and samples.
        self._field_lists: List[Optional[List[Json]]] = []
        self._prefixed: Dict[str, str] = {}  # key -> params_KEY

    def add_result(self, job_id: str, cell: str, one: Dict[str, Json]) -> None:
        config = one.get("config")
        shape = None
        if isinstance(config, dict):
            shape = (tuple(config), tuple(one))
            if shape == self._shape and self._add_shaped(job_id, config, one):
                return
        self.add(self._row(job_id, cell, one))
        self._shape = None
        if shape is None or any(v.__class__ is dict for k, v in one.items()
                                if k != "config"):
            return
        # The row just added had this shape: its columns, in its order
        # (job_id, the config's keys, the fields but config and samples).
        self._shape = shape
        lists = iter(self._lists[1:])
        self._config_lists = [next(lists) for _ in shape[0]]
        self._field_lists = [None if k in ("config", "samples") else
                             next(lists) for k in shape[1]]

    def _add_shaped(self, job_id: str, config: Dict[str, Json],
                    one: Dict[str, Json]) -> bool:
        """Appends a row of the last shape; False (nothing appended) when
        a field holds a nested object."""
        words = WORDS
        for i, (column, v) in enumerate(zip(self._field_lists, one.values())):
            if column is None:
                continue
            if v.__class__ is dict:  # undo the fields before it
                for done in self._field_lists[:i]:
                    if done is not None:
                        done.pop()
                return False
            column.append(words.get(v, v) if v.__class__ is str else v)
        self._lists[0].append(job_id)
        for column, v in zip(self._config_lists, config.values()):
            column.append(words.get(v, v) if v.__class__ is str else v)
        for column in self._missing:
            column.append(None)
        self.n += 1
        return True

    def _row(self, job_id: str, cell: str,
             one: Dict[str, Json]) -> Dict[str, Json]:
        words = WORDS
        row: Dict[str, Json] = {"job_id": job_id}
        config = one.get("config")
        if isinstance(config, dict):
            for k, v in config.items():
                name = self._prefixed.get(k)
                if name is None:
                    name = self._prefixed[k] = _PARAM_PREFIX + k
                row[name] = words.get(v, v) if v.__class__ is str else v
        else:
            for k, v in json.loads(cell).items():
                row[_PARAM_PREFIX + k] = _typed(v)
        for k, v in one.items():
            if v.__class__ is dict:
                if k != "config":
                    _flatten(k, v, row)
            elif k != "samples":
                row[k] = words.get(v, v) if v.__class__ is str else v
        return row


def _typed_frame(cols: Dict[str, List[Json]], names: List[str]) -> Any:
    """A DataFrame of `cols` with pandas' own dtypes, each column typed
    from its values' Python types (numbers with None: float64 with NaN; a
    mix: object), without pandas inferring them value by value."""
    pandas = _pandas()
    numpy = importlib.import_module("numpy")
    none: type = type(None)
    arrays: Dict[str, Any] = {}
    for name in names:
        values = cols[name]
        types = set(map(type, values))
        try:
            if types <= {float, int, none} and (float in types or
                                                 none in types) \
                    and types != {none}:
                arrays[name] = numpy.array(values, dtype=numpy.float64)
                continue
            if types == {int}:
                arrays[name] = numpy.array(values, dtype=numpy.int64)
                continue
            if types == {bool}:
                arrays[name] = numpy.array(values, dtype=bool)
                continue
        except OverflowError:
            pass  # an integer past int64: as objects
        column = numpy.empty(len(values), dtype=object)
        column[:] = values
        arrays[name] = column
    return pandas.DataFrame(arrays, columns=names)


def _pandas() -> Any:
    """The pandas module (untyped here: what crosses it is Any)."""
    try:
        # Lazily: it takes most of a second to import. Imported by name so
        # that mypy, where pandas has no stubs, needs no ignore comment.
        pandas = importlib.import_module("pandas")
    except ImportError:
        raise ImportError("tailsweep: DataFrames need pandas (apt install "
                          "python3-pandas), or pass output='records'") from None
    return pandas


def _frame(records: Sequence[Union[Dict[str, Json], Point]],
           columns: List[str], output: str) -> Any:
    """`records` as they are (output="records") or as a DataFrame."""
    if output == "records":
        return records
    if output != "pandas":
        raise InvalidArgument(
            "output '%s'; allowed: pandas, records" % output)
    return _pandas().DataFrame.from_records(records, columns=columns)


def _points(rows: Sequence[Point], output: str) -> Any:
    """Point rows (job_id, name, step, value or None) as a long frame."""
    columns = ["job_id", "name", "step", "value"]
    if output == "records":
        return [{"job_id": j, "name": n, "step": s,
                 "value": math.nan if v is None else v}
                for j, n, s, v in rows]
    frame = _frame(rows, columns, output)
    frame["value"] = frame["value"].astype("float64")  # None: NaN
    for c in ("job_id", "name"):
        frame[c] = frame[c].astype("category")
    frame["step"] = frame["step"].astype("int64")
    return frame
