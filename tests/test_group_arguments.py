"""How the per-group commands (ingest-group, derive-group) name their run group: the workflow encodes the folder
name once (quicack.layout.group_key) and passes it as --group-key; the commands decode the folder name from it and
name the group's Parquet parts by the key as given, without encoding it again."""

from __future__ import annotations

from pathlib import Path

from quicack.cli import main
from quicack.layout import group_from_key, group_key
from quicack.storage import parquet_store

LOOPBACK = Path(__file__).parent / "data" / "loopback"


def test_the_parts_are_named_by_the_group_key_as_given(tmp_path: Path):
    """A key spelled otherwise than group_key spells it (here 'a' escaped as %61) shows the difference: the parts
    are named by the key the workflow asked for, which names the rule's outputs (re-encoding it wrote them under
    'aioquic_aioquic')."""
    key = "%61ioquic_aioquic"
    assert group_from_key(key) == "aioquic_aioquic" and group_key("aioquic_aioquic") != key
    parquet = tmp_path / "parquet"
    assert main(["ingest-group", "--raw", str(LOOPBACK), f"--group-key={key}", "--dataset", "t",
                 "--parquet", str(parquet)]) == 0
    assert sorted(p.name for p in (parquet / "runs").glob("*.parquet")) == [f"{key}.parquet"]
    assert parquet_store.read_table(parquet, "runs", [key]).height > 0
    assert main(["derive-group", "--parquet", str(parquet), f"--group-key={key}"]) == 0
    assert parquet_store.read_table(parquet, "connections", [key]).height > 0


def test_a_group_named_by_its_folder_is_encoded_once(tmp_path: Path):
    parquet = tmp_path / "parquet"
    assert main(["ingest-group", "--raw", str(LOOPBACK), "--group", "aioquic_aioquic", "--dataset", "t",
                 "--parquet", str(parquet)]) == 0
    assert sorted(p.name for p in (parquet / "runs").glob("*.parquet")) == ["aioquic_aioquic.parquet"]
