"""Numbers at the edges stay JSON: MongoDB's arithmetic makes doubles that are not finite
(`$multiply` past 1.8e308 is Infinity, Infinity minus Infinity is NaN; an input file may hold NaN),
and every JSON the engine prints or returns (`query --json`, MCP tool results, the graph's rows) is
read by a strict parser. Found by the red team: `context-engine query ... --json` printed the bare
tokens `Infinity` and `NaN`, which `jq` and every strict JSON parser refuse."""

from __future__ import annotations

import json
import math

import pytest

from context_engine import cli

OVERFLOW = {"$multiply": [1e308, 10]}
PIPELINE = [
    {"$limit": 1},
    {
        "$project": {
            "_id": 0,
            "inf": OVERFLOW,
            "neg": {"$subtract": [0, OVERFLOW]},
            "nan": {"$subtract": [OVERFLOW, OVERFLOW]},
            "zero": {"$multiply": [-0.0, 1]},
            "big": {"$add": [9223372036854775807, 1]},
        }
    },
]


def _strict(text: str):
    def refuse(token: str):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("json-output") / "data"
    assert cli.main(["ingest", "sample", "--data-dir", str(data), "--no-index"]) == 0
    return data


@pytest.mark.parametrize("flag", [["--json"], []])
def test_query_output_is_strict_json_whatever_the_numbers(data_dir, capsys, flag):
    capsys.readouterr()
    code = cli.main(["query", "pull_requests", json.dumps(PIPELINE), "--data-dir", str(data_dir), *flag])
    out = capsys.readouterr().out
    assert code == 0
    (row,) = _strict(out)["records"]
    assert row == {"inf": "Infinity", "neg": "-Infinity", "nan": "NaN", "zero": -0.0, "big": 9.223372036854776e18}


def test_mcp_and_graph_rows_are_strict_json():
    from context_engine.assistant.structured_query import jsonable
    from context_engine.mcp_server import _jsonable

    rows = [{"a": math.inf, "b": [-math.inf, {"c": math.nan}], "d": 1.5}]
    for convert in (jsonable, _jsonable):
        assert _strict(json.dumps(convert(rows))) == [{"a": "Infinity", "b": ["-Infinity", {"c": "NaN"}], "d": 1.5}]
