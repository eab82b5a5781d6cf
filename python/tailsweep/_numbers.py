"""The protocol's words for the numbers JSON cannot hold: NaN, +inf and
-inf are "nan", "inf" and "-inf" in metrics lines, results, exports and
every answer of the coordinator's HTTP API (core/schema/json_number.h).
The package's one table of them."""

import math
from typing import Any, Dict, Union

# A JSON document or any value in one, as json.loads gives it (and the
# coordinator's answers are): its shape is the protocol's, not Python's.
Json = Any

WORDS: Dict[str, float] = {"nan": math.nan, "inf": math.inf,
                           "-inf": -math.inf}


def number(value: Json) -> Json:
    """`value` with a word read as its float; anything else as it is."""
    if isinstance(value, str):
        return WORDS.get(value, value)
    return value


def word(value: float) -> Union[float, str]:
    """A float as JSON can hold it: itself, or its word when not finite."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
