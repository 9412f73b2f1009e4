"""Loading every suite from local files in its real schema, the Hub path offline, selection
flags, and the one-line errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_benchmarks.assistantbench import DATASET as AB
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.gaia import DATASET as GAIA
from agent_benchmarks.records.schema import DatasetSource, Manifest, PredictionRow
from agent_benchmarks.records.storage import PredictionsWriter, read_predictions
from agent_benchmarks.scoring.scorecard import read_manifest
from agent_benchmarks.spec.datasets import (
    Selection,
    load_dataset_bundled,
    load_tasks,
    select_tasks,
    sha256_file,
    site_of,
)
from agent_benchmarks.webbench import DATASET as WEBBENCH
from tests.fixtures.webbench.upstream_draw import SEED0_ONE_PER_SITE, draw, read_tasks
from tests.support import (
    ASSISTANTBENCH_ROWS,
    COMMIT,
    GAIA_ROWS,
    WEBBENCH_CSV,
    WEBBENCH_HITL_CSV,
    make_hub_cache,
    run_cli,
    write_gaia_attachments,
    write_gaia_parquet,
    write_jsonl,
)


def test_gaia_parquet_with_attachments(gaia_file: Path) -> None:
    loaded = load_tasks(GAIA, dataset_file=gaia_file)
    assert [t.id for t in loaded.tasks] == [r["task_id"] for r in GAIA_ROWS]
    text = loaded.tasks[1]
    assert text.level == 1 and text.gold == "ocelot" and text.file_name == "g1-text.txt"
    # file_path is "2023/validation/..." in the real schema; resolved by name beside the file.
    assert text.attachment_path == gaia_file.parent / "g1-text.txt"
    assert loaded.tasks[0].attachment_path is None and loaded.tasks[0].file_name is None
    assert loaded.source.kind == "file"
    assert loaded.source.sha256 and len(loaded.source.sha256) == 64
    assert loaded.split == "validation"


def test_gaia_jsonl_with_integer_levels(tmp_path: Path) -> None:
    write_gaia_attachments(tmp_path)
    rows = [{**r, "Level": int(r["Level"])} for r in GAIA_ROWS]
    loaded = load_tasks(GAIA, dataset_file=write_jsonl(tmp_path / "metadata.jsonl", rows))
    assert [t.level for t in loaded.tasks] == [1, 1, 1, 1, 2, 3]


def test_gaia_selection_flags(gaia_file: Path) -> None:
    tasks = load_tasks(GAIA, dataset_file=gaia_file).tasks
    level1 = select_tasks(tasks, Selection(level=1))
    assert [t.id for t in level1] == ["g1-plain", "g1-text", "g1-sheet", "g1-list"]
    no_files = select_tasks(tasks, Selection(level=1, skip_attachments=True))
    assert [t.id for t in no_files] == ["g1-plain", "g1-list"]
    assert [t.id for t in select_tasks(tasks, Selection(limit=2))] == ["g1-plain", "g1-text"]
    picked = select_tasks(tasks, Selection(task_ids=["g3-name", "g1-plain"]))
    assert [t.id for t in picked] == ["g3-name", "g1-plain"]


def test_gaia_missing_attachment_is_named(tmp_path: Path) -> None:
    path = write_gaia_parquet(tmp_path / "metadata.parquet", GAIA_ROWS)  # no files beside it
    tasks = load_tasks(GAIA, dataset_file=path).tasks
    with pytest.raises(InputError, match=r"task g1-text: attachment 'g1-text.txt' not found"):
        select_tasks(tasks, Selection(level=1))
    assert len(select_tasks(tasks, Selection(level=1, skip_attachments=True))) == 2


def test_assistantbench_jsonl(assistantbench_file: Path) -> None:
    loaded = load_tasks(AB, dataset_file=assistantbench_file)
    assert [t.id for t in loaded.tasks] == [r["id"] for r in ASSISTANTBENCH_ROWS]
    assert loaded.tasks[2].gold == '{"sender": "DHL", "price (usd)": "55"}'
    assert [t.difficulty for t in loaded.tasks] == ["Easy", "Medium", "Hard"]


def test_webbench_fixture_table_keeps_read_rows() -> None:
    loaded = load_tasks(WEBBENCH, dataset_file=WEBBENCH_CSV)
    # Upstream's ids: webbench-<the table's ID column>.
    assert [t.id for t in loaded.tasks] == [
        f"webbench-{n}" for n in ("0", "2", "3", "4", "6", "7", "9", "11")
    ]
    assert all(t.category == "READ" and t.gold is None for t in loaded.tasks)
    # www., upper case, a trailing slash and a port all reduce to the host.
    assert [t.web_name for t in loaded.tasks] == [
        "acehardware.com",
        "acehardware.com",
        "acehardware.com",
        "agoda.com",
        "agoda.com",
        "allrecipes.com",
        "shop.example.org",
        "agoda.com",
    ]
    assert loaded.tasks[0].question.splitlines()[1].startswith("Only use http://acehardware.com")
    assert loaded.source.kind == "file"


# The whole READ table: the copy shipped in the package (what an offline run uses).
def _bundled_webbench():
    return load_dataset_bundled(WEBBENCH, "train")


def test_webbench_shipped_table_counts() -> None:
    loaded = _bundled_webbench()
    assert len(loaded.tasks) == 1637
    assert all(t.category == "READ" for t in loaded.tasks)
    assert len({t.web_name for t in loaded.tasks}) == 448
    assert loaded.tasks[0].web_name == "acehardware.com"
    assert all(t.gold is None for t in loaded.tasks)
    source = loaded.source
    assert (source.kind, source.hf_id) == ("bundled", "Halluminate/WebBench")
    assert source.path == "agent_benchmarks/webbench/data/webbench_read.csv"
    assert source.sha256 is not None and len(source.sha256) == 64


def _site_counts(tasks) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t.web_name] = counts.get(t.web_name, 0) + 1
    return counts


def test_webbench_seed_0_selects_upstreams_448_tasks_in_its_order() -> None:
    """The checked-in list was computed once with upstream's rule, written out on its own
    (tests/fixtures/webbench/upstream_draw.py); the harness must give exactly it."""
    expected = SEED0_ONE_PER_SITE.read_text(encoding="utf-8").split()
    assert len(expected) == 448 and len(set(expected)) == 448
    tasks = _bundled_webbench().tasks
    default = select_tasks(tasks, Selection(), WEBBENCH.default_per_site)
    assert [t.id for t in default] == expected
    explicit = Selection(sample_per_site=1, sample_seed=0)
    assert [t.id for t in select_tasks(tasks, explicit, WEBBENCH.default_per_site)] == expected
    # Sites in sorted order, one task each.
    sites = [t.web_name for t in default]
    assert sites == sorted(set(sites)) and len(sites) == 448
    # The list is still what the independent script computes from the shipped table.
    assert draw(read_tasks(), per_site=1, seed=0) == expected


@pytest.mark.parametrize(
    ("per_site", "seed", "site"),
    [
        (1, 1, None),
        (1, 7, None),
        (2, 0, None),
        (3, 12345, None),
        (50, 3, None),  # more than any site has: every task, in upstream's shuffled order
        (1, 0, "amazon.com"),  # a site alone: a fresh RNG over its tasks only
        (2, 9, "allrecipes.com"),
    ],
)
def test_webbench_draw_is_upstreams_for_any_seed_size_and_site(
    per_site: int, seed: int, site: str | None
) -> None:
    tasks = _bundled_webbench().tasks
    selection = Selection(sample_per_site=per_site, sample_seed=seed, site=site)
    picked = [t.id for t in select_tasks(tasks, selection, WEBBENCH.default_per_site)]
    assert picked == draw(read_tasks(), per_site=per_site, seed=seed, site=site)


def test_webbench_per_site_draw_properties() -> None:
    tasks = _bundled_webbench().tasks
    sizes = _site_counts(tasks)
    default = select_tasks(tasks, Selection(), WEBBENCH.default_per_site)
    again = select_tasks(tasks, Selection(), WEBBENCH.default_per_site)
    assert [t.id for t in again] == [t.id for t in default]
    other_seed = select_tasks(tasks, Selection(sample_seed=7), WEBBENCH.default_per_site)
    assert len(other_seed) == 448 and len({t.web_name for t in other_seed}) == 448
    assert [t.id for t in other_seed] != [t.id for t in default]
    two = select_tasks(tasks, Selection(sample_per_site=2), WEBBENCH.default_per_site)
    assert max(_site_counts(two).values()) == 2
    assert len(two) == sum(min(2, n) for n in sizes.values())
    assert len({t.id for t in two}) == len(two)
    # One RNG over the sorted sites: each site's draw depends on the sites before it, so
    # the first site's pick is the same for one and two per site, later ones need not be.
    assert two[0].id == default[0].id
    # --limit cuts the drawn list: the first sites in sorted order.
    first3 = select_tasks(tasks, Selection(limit=3), WEBBENCH.default_per_site)
    assert [t.id for t in first3] == [t.id for t in default[:3]]


def test_webbench_sample_per_site_all_and_0() -> None:
    tasks = _bundled_webbench().tasks
    # all: every task in the table's order, no draw (upstream without the flag).
    everything = select_tasks(tasks, Selection(sample_per_site="all"), WEBBENCH.default_per_site)
    assert [t.id for t in everything] == [t.id for t in tasks] and len(everything) == 1637
    # 0 means none, as upstream's group[:0]: an empty selection, refused naming the way out.
    with pytest.raises(InputError, match=r"--sample-per-site 0 selects no task.*all takes"):
        select_tasks(tasks, Selection(sample_per_site=0), WEBBENCH.default_per_site)
    with pytest.raises(InputError, match="--sample-per-site -1: expected a whole number"):
        select_tasks(tasks, Selection(sample_per_site=-1), WEBBENCH.default_per_site)
    # With --task-ids there is no draw, so the count does not apply.
    picked = Selection(task_ids=["webbench-7"], sample_per_site=0)
    assert [t.id for t in select_tasks(tasks, picked, 1)] == ["webbench-7"]


def test_webbench_site_is_matched_exactly() -> None:
    tasks = load_tasks(WEBBENCH, dataset_file=WEBBENCH_CSV).tasks
    ace = select_tasks(
        tasks, Selection(site="acehardware.com", sample_per_site="all"), WEBBENCH.default_per_site
    )
    assert [t.id for t in ace] == ["webbench-0", "webbench-2", "webbench-3"]
    one = select_tasks(tasks, Selection(site="acehardware.com"), WEBBENCH.default_per_site)
    assert [t.id for t in one] == draw(read_tasks(WEBBENCH_CSV), 1, 0, site="acehardware.com")
    # Upstream compares with web_name as it is: no lowercasing, no www. stripping here.
    for typed in ("www.acehardware.com", "AceHardware.com", "www.AceHardware.com"):
        with pytest.raises(InputError) as refused:
            select_tasks(tasks, Selection(site=typed), WEBBENCH.default_per_site)
        assert str(refused.value) == (
            f"--site {typed!r}: no task in the dataset has that site (site names are "
            "lowercase hosts without www.: did you mean 'acehardware.com'?)"
        )
    with pytest.raises(
        InputError, match=r"'nowhere\.example': no task in the dataset has that site$"
    ):
        select_tasks(tasks, Selection(site="nowhere.example"), 1)
    # A host with a port: the name is the host alone.
    shop = select_tasks(tasks, Selection(site="shop.example.org"), 1)
    assert [t.id for t in shop] == ["webbench-9"]


def test_webbench_draw_on_a_small_table() -> None:
    tasks = load_tasks(WEBBENCH, dataset_file=WEBBENCH_CSV).tasks
    picked = select_tasks(tasks, Selection(), WEBBENCH.default_per_site)
    assert [t.web_name for t in picked] == [
        "acehardware.com",
        "agoda.com",
        "allrecipes.com",
        "shop.example.org",
    ]
    assert [t.id for t in picked] == draw(read_tasks(WEBBENCH_CSV), per_site=1, seed=0)
    for seed in range(20):
        for per_site in (1, 2, 3):
            selection = Selection(sample_per_site=per_site, sample_seed=seed)
            ids = [t.id for t in select_tasks(tasks, selection, 1)]
            assert ids == draw(read_tasks(WEBBENCH_CSV), per_site, seed), (seed, per_site)


def test_webbench_task_ids_in_either_form() -> None:
    tasks = load_tasks(WEBBENCH, dataset_file=WEBBENCH_CSV).tasks
    # Explicit ids bypass the per-site draw, keep their order, and take N for webbench-N.
    picked = select_tasks(tasks, Selection(task_ids=["2", "webbench-0"]), 1)
    assert [t.id for t in picked] == ["webbench-2", "webbench-0"]
    same = select_tasks(tasks, Selection(task_ids=["webbench-2", "2", "0"]), 1)
    assert [t.id for t in same] == ["webbench-2", "webbench-0"]
    with pytest.raises(InputError, match="unknown task id '1'"):  # CREATE: not in the suite
        select_tasks(tasks, Selection(task_ids=["1"]), 1)
    with pytest.raises(InputError, match="unknown task id 'webbench-1'"):
        select_tasks(tasks, Selection(task_ids=["webbench-1"]), 1)
    with pytest.raises(InputError, match="task 'webbench-4' is excluded by the other selection"):
        select_tasks(tasks, Selection(site="acehardware.com", task_ids=["4"]), 1)


def test_bare_webbench_ids_of_older_runs_are_read_in_todays_form(tmp_path: Path) -> None:
    """Rows and manifests an older run wrote with WebBench's bare ``N`` are read as
    ``webbench-N`` (the id ``load_tasks`` gives the same task), the files left as written;
    other suites' ids, digits or not, are read as they are."""
    (task,) = [
        t for t in load_tasks(WEBBENCH, dataset_file=WEBBENCH_CSV).tasks if t.id.endswith("-2")
    ]
    run = tmp_path / "run"
    rows = [
        PredictionRow(id="2", suite="webbench", task="q", status="ok", backend="b"),
        PredictionRow(id="webbench-2", suite="webbench", task="q", status="ok", backend="b"),
        PredictionRow(id="2", suite="gaia", task="q", status="ok", backend="b"),
        PredictionRow(id="x2", suite="webbench", task="q", status="ok", backend="b"),
    ]
    with PredictionsWriter(run / "predictions.jsonl") as writer:
        for row in rows:
            writer.append(row)
    written = (run / "predictions.jsonl").read_bytes()
    read = read_predictions(run / "predictions.jsonl").rows
    assert [r.id for r in read] == [task.id, task.id, "2", "x2"]
    assert (run / "predictions.jsonl").read_bytes() == written
    manifest = Manifest(
        suite="webbench",
        split="train",
        dataset=DatasetSource(kind="file", path=str(WEBBENCH_CSV), sha256="0" * 64),
        task_ids=["2", "webbench-0"],
        backend="b",
        started_at="2026-11-01T00:00:00Z",
        harness_version="0.1.0",
        mode="scaffold",
    )
    (run / "manifest.json").write_text(manifest.model_dump_json())
    loaded = read_manifest(run)
    assert loaded is not None and loaded.task_ids == [task.id, "webbench-0"]


@pytest.mark.timeout(900)  # a dozen short commands, each allowed a minute
def test_webbench_selection_flags_on_the_command_line(tmp_path: Path) -> None:
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty")}  # the shipped copy

    def ids(*flags: str) -> list[str]:
        result = run_cli("agent-benchmarks", "tasks", "webbench", "--json", *flags, env=env)
        assert result.returncode == 0, result.stderr
        return [json.loads(line)["id"] for line in result.stdout.splitlines()]

    expected = SEED0_ONE_PER_SITE.read_text(encoding="utf-8").split()
    assert ids("--limit", "5") == expected[:5]
    # all: the site's every task, in the table's order.
    amazon = ids("--site", "amazon.com", "--sample-per-site", "all")
    assert amazon == [i for i, site in read_tasks() if site == "amazon.com"]
    assert len(amazon) > 1
    # A number draws, even one larger than the site: upstream's shuffled order.
    assert ids("--site", "amazon.com", "--sample-per-site", "1000") == draw(
        read_tasks(), 1000, 0, site="amazon.com"
    )
    assert ids("--task-ids", "2,webbench-7") == ["webbench-2", "webbench-7"]
    for flags, message in [
        (
            ("--sample-per-site", "0"),
            "error: --sample-per-site 0 selects no task (0 per site, as in upstream's "
            "harness); --sample-per-site all takes every task",
        ),
        (
            ("--site", "www.amazon.com"),
            "error: --site 'www.amazon.com': no task in the dataset has that site (site "
            "names are lowercase hosts without www.: did you mean 'amazon.com'?)",
        ),
    ]:
        result = run_cli("agent-benchmarks", "tasks", "webbench", *flags, env=env)
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [message]
    bad = run_cli("agent-benchmarks", "tasks", "webbench", "--sample-per-site", "two", env=env)
    assert bad.returncode == 2
    assert "expected a whole number 0 or more, or all, got 'two'" in bad.stderr


def test_webbench_hitl_table_has_difficulty() -> None:
    tasks = load_tasks(WEBBENCH, dataset_file=WEBBENCH_HITL_CSV).tasks
    assert [(t.id, t.difficulty) for t in tasks] == [
        ("webbench-0", "easy"),
        ("webbench-2", "medium"),
        ("webbench-4", "hard"),
        ("webbench-6", "easy"),
        ("webbench-7", "medium"),
    ]


def test_webbench_falls_back_to_the_shipped_copy_when_the_hub_is_unreachable(
    tmp_path: Path,
) -> None:
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty")}
    result = run_cli("agent-benchmarks", "tasks", "webbench", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 448
    # A Hub dataset with no shipped copy still refuses, naming the way out.
    ab = run_cli("agent-benchmarks", "tasks", "assistantbench", env=env)
    assert ab.returncode == 2 and "--dataset-file" in ab.stderr


def test_the_shipped_copy_is_never_used_for_a_pinned_hub_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed Hub run asks for its revision: it must get that or fail, not a copy."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(InputError, match="cannot get Halluminate/WebBench"):
        load_tasks(WEBBENCH, revision=COMMIT)
    assert load_tasks(WEBBENCH).source.kind == "bundled"  # unpinned: the copy


def test_site_of() -> None:
    assert site_of("https://WWW.Example.COM/path?q=1") == "example.com"
    assert site_of("http://shop.example.com:8080") == "shop.example.com"


# --- bad input: one line naming the problem ----------------------------------------------------


def test_unknown_task_id(gaia_file: Path) -> None:
    tasks = load_tasks(GAIA, dataset_file=gaia_file).tasks
    with pytest.raises(InputError, match="unknown task id 'nope'"):
        select_tasks(tasks, Selection(task_ids=["g1-plain", "nope"]))
    with pytest.raises(InputError, match="'g2-money' is excluded by the other selection"):
        select_tasks(tasks, Selection(level=1, task_ids=["g2-money"]))


def test_empty_selection(tmp_path: Path) -> None:
    path = write_gaia_parquet(tmp_path / "m.parquet", [GAIA_ROWS[4]])
    tasks = load_tasks(GAIA, dataset_file=path).tasks
    with pytest.raises(InputError, match="the selection is empty"):
        select_tasks(tasks, Selection(level=1))


def test_missing_file_and_unknown_type(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.jsonl: dataset file not found"):
        load_tasks(AB, dataset_file=tmp_path / "nope.jsonl")
    (tmp_path / "data.xml").write_text("<x/>")
    with pytest.raises(InputError, match=r"unsupported dataset file type '\.xml'"):
        load_tasks(AB, dataset_file=tmp_path / "data.xml")


def test_missing_column_is_named(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "difficulty"} for r in ASSISTANTBENCH_ROWS]
    path = write_jsonl(tmp_path / "ab.jsonl", rows)
    with pytest.raises(InputError, match=r"ab\.jsonl: missing column 'difficulty'"):
        load_tasks(AB, dataset_file=path)
    csv = tmp_path / "wb.csv"
    csv.write_text('ID,Starting URL,Task\n1,https://a.example,"read it"\n')
    with pytest.raises(InputError, match=r"missing column 'Category'"):
        load_tasks(WEBBENCH, dataset_file=csv)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ab.jsonl"
    good = json.dumps(ASSISTANTBENCH_ROWS[0]).encode()
    path.write_bytes(good + b"\n" + good.replace(b"season", b"seas\xffon") + b"\n")
    with pytest.raises(InputError, match=r"ab\.jsonl:2: invalid UTF-8"):
        load_tasks(AB, dataset_file=path)


def test_malformed_jsonl_line(tmp_path: Path) -> None:
    path = tmp_path / "ab.jsonl"
    path.write_text(json.dumps(ASSISTANTBENCH_ROWS[0]) + "\n{not json\n")
    with pytest.raises(InputError, match=r"ab\.jsonl:2: not a JSON line"):
        load_tasks(AB, dataset_file=path)


def test_duplicate_ids_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ab.jsonl", [ASSISTANTBENCH_ROWS[0]] * 2)
    with pytest.raises(InputError, match="row 2: duplicate task id 'ab-number'"):
        load_tasks(AB, dataset_file=path)


def test_unknown_split(gaia_file: Path) -> None:
    with pytest.raises(InputError, match="--split 'train' is not a split of gaia"):
        load_tasks(GAIA, split="train", dataset_file=gaia_file)


# --- the Hub path, offline, through the real huggingface_hub client -----------------------------


def _gaia_hub_files(tmp_path: Path) -> dict[str, bytes]:
    staging = tmp_path / "staging"
    write_gaia_attachments(staging)
    level1 = [r for r in GAIA_ROWS if r["Level"] == "1"]
    write_gaia_parquet(staging / "l1.parquet", level1)
    write_gaia_parquet(staging / "all.parquet", GAIA_ROWS)
    return {
        "2023/validation/metadata.level1.parquet": (staging / "l1.parquet").read_bytes(),
        "2023/validation/metadata.parquet": (staging / "all.parquet").read_bytes(),
        "2023/validation/g1-text.txt": (staging / "g1-text.txt").read_bytes(),
        "2023/validation/g1-sheet.xlsx": (staging / "g1-sheet.xlsx").read_bytes(),
    }


def test_gaia_from_hub_cache_records_revision(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    snapshot = make_hub_cache(cache, "gaia-benchmark/GAIA", _gaia_hub_files(tmp_path))
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_TOKEN": ""}
    result = run_cli("agent-benchmarks", "tasks", "gaia", "--json", env=env)
    assert result.returncode == 0, result.stderr
    tasks = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["id"] for t in tasks] == ["g1-plain", "g1-text", "g1-sheet", "g1-list"]
    assert tasks[1]["attachment_path"] == str(snapshot / "2023/validation/g1-text.txt")
    assert all("gold" not in t and "ocelot" not in json.dumps(t) for t in tasks)
    every = run_cli("agent-benchmarks", "tasks", "gaia", "--level", "all", env=env)
    assert every.returncode == 0, every.stderr
    assert "6 of 6 tasks" in every.stdout
    assert COMMIT in every.stdout.replace("\n", "")


def test_gaia_gated_without_token_exits_2(tmp_path: Path) -> None:
    env = {
        "HF_HUB_OFFLINE": "0",
        "HF_HOME": str(tmp_path / "hf-home"),  # no cached login here
        "HF_TOKEN": "",
        "HF_HUB_CACHE": str(tmp_path / "empty-cache"),
    }
    result = run_cli("agent-benchmarks", "tasks", "gaia", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "GAIA is gated" in lines[0] and "HF_TOKEN" in lines[0]
    assert "--dataset-file" in lines[0]


def test_assistantbench_and_webbench_from_hub_cache(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    rows = "".join(json.dumps(r) + "\n" for r in ASSISTANTBENCH_ROWS).encode()
    make_hub_cache(cache, "AssistantBench/AssistantBench", {"assistant_bench_v1.0_dev.jsonl": rows})
    make_hub_cache(cache, "Halluminate/WebBench", {"webbenchfinal.csv": WEBBENCH_CSV.read_bytes()})
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    ab = run_cli("agent-benchmarks", "tasks", "assistantbench", "--json", env=env)
    assert ab.returncode == 0, ab.stderr
    assert len(ab.stdout.splitlines()) == 3
    wb = run_cli("agent-benchmarks", "tasks", "webbench", "--json", env=env)
    assert wb.returncode == 0, wb.stderr
    # The Hub's table (here the 4-site fixture), not the copy shipped in the package.
    assert sorted(json.loads(line)["web_name"] for line in wb.stdout.splitlines()) == [
        "acehardware.com",
        "agoda.com",
        "allrecipes.com",
        "shop.example.org",
    ]


def test_hub_unreachable_is_one_clear_line(tmp_path: Path) -> None:
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty")}
    result = run_cli("agent-benchmarks", "tasks", "assistantbench", env=env)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "cannot get AssistantBench/AssistantBench" in result.stderr
    assert "--dataset-file" in result.stderr


READ_TWICE = """
import json, sys
from pathlib import Path
started = []  # the programs this process starts (the table reader is one)
sys.addaudithook(lambda event, args: event == "subprocess.Popen" and started.append(args[1]))
from agent_benchmarks.spec.datasets import read_table
rows, columns = read_table(Path(sys.argv[1]))
print(json.dumps({"rows": rows, "columns": columns, "readers_started": len(started)}))
"""


def test_a_table_read_once_is_read_from_the_users_cache_by_the_next_process(
    tmp_path: Path,
) -> None:
    table = tmp_path / "tasks.csv"
    table.write_text("ID,Task,Score\n7,read the page,1.5\n8,count the links,\n", encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def read_in_a_new_process() -> dict:
        proc = subprocess.run(
            [sys.executable, "-c", READ_TWICE, str(table)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return json.loads(proc.stdout)

    first, second = read_in_a_new_process(), read_in_a_new_process()
    # datasets' own reading of the CSV (its types: ints, a float, a missing value as None).
    assert first["rows"] == [
        {"ID": 7, "Task": "read the page", "Score": 1.5},
        {"ID": 8, "Task": "count the links", "Score": None},
    ]
    assert (first["columns"], first["readers_started"]) == (["ID", "Task", "Score"], 1)
    assert {**second, "readers_started": 0} == {**first, "readers_started": 0}
    assert second["readers_started"] == 0
    (cached,) = (tmp_path / "cache" / "agent-benchmarks" / "tables").iterdir()
    assert cached.name.startswith(sha256_file(table)) and cached.name.endswith(".json")

    # A table changed in place is a new digest: read again, never the old rows.
    table.write_text("ID,Task,Score\n9,another task,2\n", encoding="utf-8")
    third = read_in_a_new_process()
    assert third["rows"] == [{"ID": 9, "Task": "another task", "Score": 2}]
    assert third["readers_started"] == 1
