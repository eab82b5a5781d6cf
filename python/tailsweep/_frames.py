"""How client.py turns the sources' rows into values and frames: typed
parameters, the protocol's number words, dotted columns, long point
frames; pandas imported only when a frame is asked for."""

import importlib
import json
import math
from typing import Any, Dict, List, Sequence, Union

from tailsweep._database import Point
from tailsweep._numbers import Json, number
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


def _pandas() -> Any:
    """The pandas module (untyped here: what crosses it is Any)."""
    try:
        # Lazily: it takes most of a second to import. By name, so that
        # type checkers without pandas' stubs need no exception.
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
