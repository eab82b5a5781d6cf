"""How client.py turns the sources' rows into values and frames: typed
parameters, the protocol's number words, dotted columns, long point
frames; pandas imported only when a frame is asked for."""

import json
import math

from tailsweep.errors import InvalidArgument

_PARAM_PREFIX = "params_"
_NUMBER_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _typed(text):
    """A parameter's text as its type (a number or boolean when it is one;
    JSON lists too), as `tailsweep export` types grid values."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return text
    if isinstance(value, (bool, int, float, list)):
        return value
    return text


def _text(value):
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


def _number(value):
    """A result's number: JSON's, or the protocol's "nan", "inf", "-inf"."""
    if isinstance(value, str) and value in _NUMBER_WORDS:
        return _NUMBER_WORDS[value]
    return value


def _flatten(prefix, value, row):
    """Nested objects (a command job's summary, outcomes, child) become
    dotted columns: summary.loss.last."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(prefix + "." + key if prefix else key, inner, row)
    else:
        row[prefix] = _number(value)


def _pandas():
    try:
        import pandas  # lazily: it takes most of a second to import
    except ImportError:
        raise ImportError("tailsweep: DataFrames need pandas (apt install "
                          "python3-pandas), or pass output='records'") from None
    return pandas


def _frame(records, columns, output):
    if output == "records":
        return records
    if output != "pandas":
        raise InvalidArgument(
            "output '%s'; allowed: pandas, records" % output)
    return _pandas().DataFrame.from_records(records, columns=columns)


def _points(rows, output):
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
